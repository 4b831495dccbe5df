#include "harness/train/step_graph.h"

#include <stdexcept>

#if defined(LOCKSTEP_WITH_CUDA)
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#endif

namespace lockstep::train {

struct StepGraph::Impl {
#if defined(LOCKSTEP_WITH_CUDA)
  at::cuda::CUDAGraph fwd, bwd;
#endif
  bool captured = false;
  torch::Tensor x, y;         // static inputs
  torch::Tensor loss, train;  // static outputs of the forward graph
  torch::Tensor scale;        // () device scalar the backward graph multiplies by
};

StepGraph::StepGraph() : impl_(std::make_unique<Impl>()) {}
StepGraph::~StepGraph() = default;

bool StepGraph::captured() const {
  return impl_->captured;
}

void StepGraph::capture(const torch::Tensor& x, const torch::Tensor& y, const Forward& forward) {
#if defined(LOCKSTEP_WITH_CUDA)
  auto& g = *impl_;
  // Static inputs and the scale live outside the graphs' pool: they are written between replays.
  g.x = x.clone();
  g.y = y.clone();
  g.scale = torch::ones({}, torch::TensorOptions().dtype(torch::kFloat32).device(x.device()));
  // Capture runs on a side stream that first waits for everything queued so far.
  const auto current = at::cuda::getCurrentCUDAStream();
  auto side = at::cuda::getStreamFromPool(/*isHighPriority=*/false, x.device().index());
  at::cuda::CUDAEvent ready;
  ready.record(current);
  ready.block(side);
  {
    c10::cuda::CUDAStreamGuard guard(side);
    g.fwd.capture_begin();
    auto [loss, train] = forward(g.x, g.y);
    g.loss = loss;
    g.train = train;
    g.fwd.capture_end();
    g.bwd.capture_begin(g.fwd.pool());
    // Retained: every replay of the forward refills the saved tensors this graph reads.
    (g.train * g.scale).backward({}, /*retain_graph=*/true);
    g.bwd.capture_end();
  }
  at::cuda::CUDAEvent done;
  done.record(side);
  done.block(current);
  g.captured = true;
#else
  (void)x, (void)y, (void)forward;
  throw std::logic_error("run.cuda_graphs: this build has no CUDA");
#endif
}

const torch::Tensor& StepGraph::forward(const torch::Tensor& x, const torch::Tensor& y) {
  auto& g = *impl_;
#if defined(LOCKSTEP_WITH_CUDA)
  g.x.copy_(x);
  g.y.copy_(y);
  g.fwd.replay();
#else
  (void)x, (void)y;
#endif
  return g.loss;
}

void StepGraph::backward(double scale) {
#if defined(LOCKSTEP_WITH_CUDA)
  auto& g = *impl_;
  g.scale.fill_(scale);
  g.bwd.replay();
#else
  (void)scale;
#endif
}

}  // namespace lockstep::train
