// How a micro-batch's forward and backward run: eagerly, or ([run] cuda_graphs) replayed as CUDA
// graphs (step_graph.h). The step owns one and asks it at each step whether it may replay; it is
// not a hook (nothing beside the step), it is how the step runs.
#pragma once

#include <cstdint>
#include <memory>

#include "harness/train/model_builder.h"

namespace lockstep::train {

class MicroStep {
 public:
  virtual ~MicroStep() = default;
  // Before the step's micro-batches: `eager` when a hook needs this step eager. Returns whether
  // the step captures its graphs (such a step is never timed).
  virtual bool begin_step(int64_t step, bool eager) = 0;
  // The forward, up to the loss, under the precision variant's scope. x, y: (B, T).
  virtual Losses forward(const Batch& b) = 0;
  // The backward of (train loss x scale), accumulated into the gradients.
  virtual void backward(const torch::Tensor& train, double scale) = 0;
};

// Eager unless run.cuda_graphs: then the forward and backward are replayed from step 2 (shapes
// static, kernels and allocator warm), except the steps a hook needs eager (profiled and warm-up
// steps, faults.nonfinite_at).
std::unique_ptr<MicroStep> make_micro_step(RankModel& m);

}  // namespace lockstep::train
