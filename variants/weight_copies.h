// A training step's low-precision weights, cast as one copy per unit (issue 52).
//
// Autocast casts each weight on its own: a cast in the forward and, in the backward, a cast of its
// gradient back to fp32 before it is accumulated (at gpt2-124m's depth 97 + 97 ops per step, two
// kernel launches per weight on a GPU). Here a block's flat fp32 buffer (variants/sharding.h) is
// copied into a low-precision buffer kept across steps, one copy per unit per step at the unit's
// first use; each weight's copy is a slice of it whose gradient goes straight into the fp32
// gradient (grad += g: what autocast's cast-back then AccumulateGrad compute, element for element,
// so the same bits).
//
// Not the embedding unit (unit 0): its tied weight also meets the embedding in fp32, and its two
// gradients would be summed in another order. The MLP's expansion weights reach the activation
// kernel (a plugin slot) in fp32, as its contract has them: the built-in GELU takes their copies
// (compat::autocast_weight), a plugin's kernel gets them cast by autocast. Not under ZeRO-3 (a
// unit's buffer comes and goes) nor CUDA graphs (a capture's casts belong to the graph):
// applies() says where.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "harness/compat/autocast_weight.h"
#include "variants/sharding.h"

namespace lockstep::variants {

class WeightCopies final : public compat::WeightSource {
 public:
  // Whether a step with these settings computes with WeightCopies.
  static bool applies(bool autocasts, int zero_stage, bool cuda_graphs) {
    return autocasts && zero_stage < 3 && !cuda_graphs;
  }

  WeightCopies(const Sharding& sharding, at::ScalarType dtype);
  ~WeightCopies() override;
  WeightCopies(const WeightCopies&) = delete;
  WeightCopies& operator=(const WeightCopies&) = delete;

  // RAII over a step's micro-batches: the copies are installed on this thread
  // (compat::weight_source) and each unit is copied at its first use, so after the step's weight
  // noise (faults.h on_params, at the first forward's start) and before the update. At its end
  // they are uninstalled: other forwards (the probe's, evaluation) cast as autocast does.
  class Window {
   public:
    explicit Window(WeightCopies* copies);
    ~Window();
    Window(const Window&) = delete;
    Window& operator=(const Window&) = delete;

   private:
    WeightCopies* copies_;
  };

  const at::Tensor* find(const at::Tensor& w, at::ScalarType dtype) override;

 private:
  struct Unit {
    torch::Tensor full;  // (padded) the unit's fp32 parameters
    torch::Tensor copy;  // (padded) in dtype_
    bool fresh = false;  // copied in this window
  };
  struct Entry {
    size_t unit;
    torch::Tensor copy;  // the weight's slice of its unit's copy; its gradient edge adds to fp32
  };
  at::ScalarType dtype_;
  std::vector<Unit> units_;
  std::unordered_map<const c10::TensorImpl*, Entry> entries_;
};

}  // namespace lockstep::variants
