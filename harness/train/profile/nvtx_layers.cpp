#include "harness/train/profile/nvtx_layers.h"

#include <string>

namespace lockstep::train {
namespace {

#if defined(LOCKSTEP_WITH_CUDA)
void push(const std::string& name) {
  torch::profiler::impl::cudaStubs()->rangePush(name.c_str());
}
void pop() {
  torch::profiler::impl::cudaStubs()->rangePop();
}
#else
void push(const std::string&) {}
void pop() {}
#endif

// Backward ranges open on the thread the gradient hooks run on; one open at a time per thread.
thread_local bool t_backward_open = false;

void backward_boundary(const std::string& next) {
  if (t_backward_open) pop();
  t_backward_open = !next.empty();
  if (t_backward_open) push(next);
}

}  // namespace

void NvtxLayers::before_forward(int unit) {
  push(unit == 0 ? "embedding" : "block " + std::to_string(unit - 1));
}

void NvtxLayers::after_embedding(torch::Tensor& x) {
  pop();  // embedding
  if (x.requires_grad()) x.register_hook([](torch::Tensor) { backward_boundary(""); });
}

void NvtxLayers::after_forward(int unit, torch::Tensor& out) {
  if (unit == 0) {
    pop();  // head
    return;
  }
  pop();  // block unit-1
  if (unit == n_blocks_) push("head");
  const std::string name = "block " + std::to_string(unit - 1) + " backward";
  if (out.requires_grad()) out.register_hook([name](torch::Tensor) { backward_boundary(name); });
}

}  // namespace lockstep::train
