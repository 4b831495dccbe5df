// The inputs conformance runs each slot's kernels on, each with the name the report uses. Built to
// expose the errors kernels make: a near-one-hot softmax (large q.k), a flat one, one huge logit
// per row (no max subtraction: overflow), T = 1, T not a multiple of any block size, T longer than
// the model's (accumulation in low precision), magnitudes near the dtype's range, zeros, and the
// model's own shapes. Values are float64 (a kernel gets them rounded to its dtype, the reference
// the same rounded values), drawn from LibTorch's global generator, seeded by the caller.
#pragma once

#include <string>
#include <vector>

#include "harness/compat/torch_compat.h"
#include "include/lockstep/plugin.h"
#include "workloads/model_config.h"

namespace lockstep::conformance {

struct Case {
  std::string name;
  std::string shape;                  // for the report: "B 2, H 4, T 64, hd 32"
  std::vector<torch::Tensor> inputs;  // float64 (targets: int64), in the slot's argument order
  double eps = 1e-5;                  // layer_norm
  // Inputs whose gradient is zero by definition here (attention at T = 1: the softmax of one
  // element is 1 whatever q and k are), so any rounding would "fail" against an exact 0: not
  // judged. Empty: every gradient is.
  std::vector<std::string> gradient_not_judged = {};
};

std::vector<Case> attention_cases(const workloads::ModelConfig& m);   // q, k, v
std::vector<Case> activation_cases(const workloads::ModelConfig& m);  // x, weight, bias
std::vector<Case> layer_norm_cases(const workloads::ModelConfig& m);  // x, weight, bias
std::vector<Case> loss_cases(const workloads::ModelConfig& m);        // logits, targets

// The optimizer: `steps` AdamW steps on random buffers with a decay mask, from zero moments.
struct OptimizerCase {
  std::string name, shape;
  torch::Tensor param, decay_mask;   // float64
  std::vector<torch::Tensor> grads;  // one per step, float64 (fp32-representable)
  plugin::AdamWStep hyper;           // lr, betas, eps, weight decay (step set per step)
};
std::vector<OptimizerCase> optimizer_cases();

}  // namespace lockstep::conformance
