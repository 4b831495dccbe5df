// [run] cuda_graphs: each micro-step's forward (with the loss) and backward, captured once as two
// CUDA graphs sharing one memory pool (as torch.cuda.make_graphed_callables does), then replayed:
// the same kernels on the same addresses, launched once per graph instead of once per kernel.
//
// What stays eager: the batch copy into the graph's static inputs, zeroing the gradients, the
// collectives, the gradient norm, the loss scaler and the optimizer (they read host values), and
// every step the profiler, the layer hooks or an injected fault needs (hooks and host clocks do not
// run inside a replay). The loss scale enters the backward graph as a device scalar, so fp16's
// dynamic scaling works unchanged. CUDA only; one rank, ZeRO stage 0 (collectives and freed
// gradient buffers cannot be captured).
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "harness/compat/torch_compat.h"

namespace lockstep::train {

class StepGraph {
 public:
  // Forward of one micro-step: (x, y) -> (reported loss, differentiated loss), both scalars.
  using Forward = std::function<std::pair<torch::Tensor, torch::Tensor>(const torch::Tensor&,
                                                                        const torch::Tensor&)>;
  StepGraph();
  ~StepGraph();
  bool captured() const;
  // Captures the forward and the backward of (differentiated loss * scale) for inputs shaped like
  // x and y, on a side stream. Nothing runs: replay afterwards. Throws when the capture fails.
  void capture(const torch::Tensor& x, const torch::Tensor& y, const Forward& forward);
  // Copies x and y into the static inputs and replays the forward; returns the reported loss (a
  // static tensor, overwritten by the next replay).
  const torch::Tensor& forward(const torch::Tensor& x, const torch::Tensor& y);
  // Replays the backward with the gradients multiplied by `scale` (accumulated into .grad).
  void backward(double scale);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep::train
