// The function probe (issue 16): what the model computes at *fixed* weights, so that a numerics
// bug is measured without training's chaos. A loss curve amplifies every rounding difference
// until a 2% change of the attention logits is lost in bf16's own drift (bench/RESULTS.md); at
// the same weights nothing is amplified.
//
// A probe run (`lockstep run CONFIG --probe CHECKPOINTS`) loads each checkpoint of the baseline's
// alignment run, runs the forward on kProbeBatches fixed batches (those of steps run.steps + 1,
// ..., past the schedule: the same for every arm at one seed) under its own config's numerics
// (precision scope, kernels, faults, the envelope's weight noise), and records every kernel call
// (LayerNorm, attention, activation, in forward order): the inputs it receives (attention's q, k,
// v; LayerNorm's x, the residual stream), then its output, and the logits. The inputs matter: a
// diffuse attention's output is nearly blind to its logits (it averages v), so a change in the
// score path (a wrong scale on q, a broken projection) is seen at q long before it reaches the
// output; and with them every GEMM's result is observed directly (q, k, v are the QKV
// projection's, a LayerNorm's input carries the output projections'). Each tensor is
// kept as a CountSketch, m signed hash buckets over its elements: the sketch is linear, so
// ||S(a) - S(b)|| estimates ||a - b|| (relative error about 1/sqrt(m)) between any two runs, and a
// change in a single element is kept, which a subsample would drop.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "harness/compat/torch_compat.h"
#include "harness/vocab/probe_file.h"
#include "workloads/gpt.h"

namespace lockstep::train {

constexpr int64_t kProbeBatches = 2;     // probe batches per checkpoint

// Collects sketches forward after forward. A tensor is named by its kind and the ordinal of that
// kind within the forward; batch b of a checkpoint adds into the same sketches with hashes of its
// own (the sketch of the batches concatenated).
class ProbeRecorder {
 public:
  bool active() const { return active_; }
  void begin_forward(int64_t batch);  // activates recording
  void end_forward() { active_ = false; }
  // `t` is a kernel call's output, or with `input` its input of that name (recorded before the
  // output: "attention[0].q"). Any dtype or device.
  void add(const char* kind, const torch::Tensor& t, const char* input = nullptr);
  // The sketches since the last take(), and their names (the same at every checkpoint).
  std::vector<std::vector<double>> take(std::vector<std::string>* names);

 private:
  bool active_ = false;
  int64_t batch_ = 0;
  size_t next_ = 0;  // the next tensor's index within this forward
  std::vector<std::pair<std::string, int>> kinds_;  // calls per kind within this forward
  std::vector<std::string> names_;
  std::vector<torch::Tensor> sketches_;  // (m) fp64 each, on the recorded tensors' device
  std::map<std::pair<uint64_t, int64_t>, torch::Tensor> signs_;  // (salt, rows + 1) -> u

  void sketch_into(torch::Tensor& sketch, const torch::Tensor& t, uint64_t salt);
};

// The kernels with every output recorded into `rec` (what they return, faults included), in the
// order the forward calls them.
workloads::ModelKernels recording(workloads::ModelKernels k, ProbeRecorder* rec);

}  // namespace lockstep::train
