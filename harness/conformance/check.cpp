#include "harness/conformance/check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "harness/conformance/cases.h"
#include "harness/conformance/reference.h"
#include "harness/kernels/registry.h"
#include "variants/precision.h"

namespace lockstep::conformance {
namespace {

using Slot = registry::Slot;
using Args = std::vector<torch::Tensor>;
using Fn = std::function<torch::Tensor(const Args&)>;  // a slot's kernel, its arguments in a list

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kFloorUlps = 4.0 * 5.9604644775390625e-08;  // 4 fp32 unit roundoffs (2^-24)

struct Measured {
  torch::Tensor out;               // float64, CPU
  std::vector<torch::Tensor> grads;  // float64, CPU, one per differentiable input (undefined: none)
  std::string threw;               // one line when the kernel threw
};

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// max |a - b|, +inf when a holds a non-finite value the reference does not
double max_error(const torch::Tensor& a, const torch::Tensor& ref) {
  if (!a.defined()) return kInf;
  if (a.sizes() != ref.sizes()) return kInf;
  const auto bad = (~torch::isfinite(a)) & torch::isfinite(ref);
  if (bad.any().item<bool>()) return kInf;
  const auto d = (a - ref).abs().nan_to_num(0.0);
  return d.numel() ? d.max().item<double>() : 0.0;
}

double max_abs(const torch::Tensor& t) {
  const auto f = t.abs().nan_to_num(0.0, 0.0, 0.0);
  return f.numel() ? f.max().item<double>() : 0.0;
}

// Runs `fn` on `inputs` (in the dtypes the kernel gets) inside `prec`'s autocast scope, then its
// backward with the upstream gradient `gy`.
Measured run(const Fn& fn, const Args& inputs, const std::vector<bool>& diff, const torch::Tensor& gy,
             const variants::Precision* prec, const torch::Device& dev) {
  Measured m;
  Args leaves;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto t = inputs[i].detach().to(dev).clone();
    leaves.push_back(diff[i] ? t.requires_grad_(true) : t);
  }
  try {
    torch::Tensor out;
    {
      std::optional<variants::Precision::Scope> scope;
      if (prec) scope.emplace(*prec);
      out = fn(leaves);
    }
    m.out = out.detach().to(torch::kCPU).to(torch::kFloat64);
    if (out.requires_grad()) out.backward(gy.to(dev).to(out.scalar_type()).view(out.sizes()));
    for (size_t i = 0; i < leaves.size(); ++i)
      m.grads.push_back(diff[i] && leaves[i].grad().defined()
                            ? leaves[i].grad().to(torch::kCPU).to(torch::kFloat64)
                            : torch::Tensor());
  } catch (const std::exception& e) {
    m.threw = first_line(e.what());
  }
  return m;
}

Measured run_reference(const Fn& ref, const Args& inputs, const std::vector<bool>& diff,
                       const torch::Tensor& gy) {
  Measured m;
  Args leaves;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto t = inputs[i].detach().to(torch::kCPU);
    if (t.is_floating_point()) t = t.to(torch::kFloat64);
    leaves.push_back(diff[i] ? t.clone().requires_grad_(true) : t);
  }
  auto out = ref(leaves);
  m.out = out.detach();
  out.backward(gy.view(out.sizes()));
  for (size_t i = 0; i < leaves.size(); ++i)
    m.grads.push_back(diff[i] ? leaves[i].grad() : torch::Tensor());
  return m;
}

const char* dtype_name(at::ScalarType t) {
  return t == at::kBFloat16 ? "bf16" : t == at::kHalf ? "fp16" : t == at::kFloat ? "fp32" : "fp64";
}

struct SlotSpec {
  Fn candidate, builtin, reference;
  std::vector<Case> cases;
  std::vector<bool> diff;                 // which arguments get a gradient
  std::vector<std::string> arg_names;     // for "grad q" ...
  std::vector<bool> in_compute_dtype;     // rounded to the autocast dtype (else fp32)
};

SlotSpec spec_for(const registry::ImplInfo& e, const workloads::ModelConfig& model) {
  SlotSpec s;
  switch (e.slot) {
    case Slot::Attention: {
      auto wrap = [](plugin::AttentionFn f) -> Fn { return [f](const Args& a) { return f(a[0], a[1], a[2]); }; };
      s.candidate = wrap(registry::attention_kernel(e.name, e.origin));
      s.builtin = wrap(registry::attention_kernel(reference_builtin(e.slot)));
      s.reference = [](const Args& a) { return ref::attention(a[0], a[1], a[2]); };
      s.cases = attention_cases(model);
      s.diff = {true, true, true};
      s.arg_names = {"q", "k", "v"};
      s.in_compute_dtype = {true, true, true};  // q, k, v come out of the QKV GEMM
      break;
    }
    case Slot::Activation: {
      auto wrap = [](plugin::ActivationFn f) -> Fn { return [f](const Args& a) { return f(a[0], a[1], a[2]); }; };
      s.candidate = wrap(registry::activation_kernel(e.name, e.origin));
      s.builtin = wrap(registry::activation_kernel(reference_builtin(e.slot)));
      s.reference = [](const Args& a) { return ref::activation(a[0], a[1], a[2]); };
      s.cases = activation_cases(model);
      s.diff = {true, true, true};
      s.arg_names = {"x", "weight", "bias"};
      s.in_compute_dtype = {false, false, false};  // a LayerNorm's fp32 output, fp32 master weights
      break;
    }
    case Slot::LayerNorm: {
      auto f = registry::layer_norm_kernel(e.name, e.origin);
      auto b = registry::layer_norm_kernel(reference_builtin(e.slot));
      s.candidate = [f](const Args& a) { return f(a[0], a[1], a[2], 1e-5); };
      s.builtin = [b](const Args& a) { return b(a[0], a[1], a[2], 1e-5); };
      s.reference = [](const Args& a) { return ref::layer_norm(a[0], a[1], a[2], 1e-5); };
      s.cases = layer_norm_cases(model);
      s.diff = {true, true, true};
      s.arg_names = {"x", "weight", "bias"};
      s.in_compute_dtype = {false, false, false};  // the fp32 residual stream
      break;
    }
    case Slot::Loss: {
      auto wrap = [](plugin::LossFn f) -> Fn { return [f](const Args& a) { return f(a[0], a[1]); }; };
      s.candidate = wrap(registry::loss_kernel(e.name, e.origin));
      s.builtin = wrap(registry::loss_kernel(reference_builtin(e.slot)));
      s.reference = [](const Args& a) { return ref::cross_entropy(a[0], a[1]); };
      s.cases = loss_cases(model);
      s.diff = {true, false};
      s.arg_names = {"logits", "targets"};
      s.in_compute_dtype = {true, false};  // the head's GEMM output; int64 targets
      break;
    }
    case Slot::Optimizer:
      break;  // check_optimizer
  }
  return s;
}

// ref_max: the larger of max |reference| and max |inputs|: rounding at the inputs' magnitude is
// part of any kernel's arithmetic (a loss over logits near 1e4 rounds at 1e4's ulp), so the floor
// scales with it.
ConformanceRow row_for(const registry::ImplInfo& e, config::Knob knob, const Case& c,
                       const std::string& direction, const std::string& dtype, double error,
                       double builtin_error, double factor, double ref_max) {
  ConformanceRow r;
  r.slot = registry::slot_name(e.slot);
  r.kernel = e.name;
  r.origin = e.builtin() ? "built-in" : std::filesystem::path(e.origin).filename().string();
  r.knob = registry::knob_name(knob);
  r.case_name = c.name;
  r.shape = c.shape;
  r.direction = direction;
  r.dtype = dtype;
  r.error = error;
  r.builtin_error = builtin_error;
  r.builtin = reference_builtin(e.slot);
  r.factor = factor;
  r.floor = kFloorUlps * ref_max + 1e-300;
  r.bound = factor * builtin_error + r.floor;
  r.passed = std::isfinite(error) && error <= r.bound;
  return r;
}

void check_slot(const registry::ImplInfo& e, config::Knob knob, const Options& o,
                const variants::Precision* prec, at::ScalarType compute_dtype,
                ConformanceReport& report) {
  const SlotSpec s = spec_for(e, o.model);
  for (const auto& c : s.cases) {
    Args inputs;  // rounded to what the kernel gets
    Args builtin_inputs;  // at the variant's precision: the built-in in the same low precision
    double input_max = 0;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const auto& x = c.inputs[i];
      inputs.push_back(!x.is_floating_point() ? x
                       : s.in_compute_dtype[i] ? x.to(compute_dtype)
                                               : x.to(torch::kFloat32));
      builtin_inputs.push_back(!x.is_floating_point() ? x
                               : prec ? x.to(compute_dtype)
                                      : inputs.back());
      if (x.is_floating_point()) input_max = std::max(input_max, max_abs(inputs.back().to(torch::kFloat64)));
    }
    // The upstream gradient: fixed random, bf16-representable (exact in every dtype here), of
    // the output's shape (the reference's forward says it).
    std::vector<int64_t> out_shape;
    {
      torch::NoGradGuard ng;
      Args a;
      for (const auto& t : inputs) a.push_back(t.is_floating_point() ? t.to(torch::kFloat64) : t);
      out_shape = s.reference(a).sizes().vec();
    }
    const auto gy = torch::randn(out_shape, torch::TensorOptions().dtype(torch::kFloat64))
                        .to(torch::kBFloat16)
                        .to(torch::kFloat64);
    const auto ref = run_reference(s.reference, inputs, s.diff, gy);
    const auto cand = run(s.candidate, inputs, s.diff, gy, prec, o.device);
    const auto base = run(s.builtin, builtin_inputs, s.diff, gy, prec, o.device);
    std::string dtype = dtype_name(inputs[0].scalar_type());
    if (prec && !s.in_compute_dtype[0]) dtype += " under " + std::string(dtype_name(compute_dtype)) + " autocast";
    if (!cand.threw.empty()) {
      auto r = row_for(e, knob, c, "forward (threw: " + cand.threw + ")", dtype, kInf, 0, kOutputFactor, 0);
      report.rows.push_back(r);
      continue;
    }
    report.rows.push_back(row_for(e, knob, c, "forward", dtype, max_error(cand.out, ref.out),
                                  max_error(base.out, ref.out), kOutputFactor,
                                  std::max(max_abs(ref.out), input_max)));
    for (size_t i = 0; i < s.diff.size(); ++i) {
      if (!s.diff[i]) continue;
      if (std::find(c.gradient_not_judged.begin(), c.gradient_not_judged.end(), s.arg_names[i]) !=
          c.gradient_not_judged.end())
        continue;
      const auto& g = ref.grads[i];
      report.rows.push_back(row_for(e, knob, c, "grad " + s.arg_names[i], dtype,
                                    max_error(cand.grads[i], g), max_error(base.grads[i], g),
                                    kGradientFactor, std::max(max_abs(g), input_max)));
    }
  }
}

void check_optimizer(const registry::ImplInfo& e, config::Knob knob, const Options& o,
                     ConformanceReport& report) {
  auto cand = registry::optimizer_kernel(e.name, e.origin);
  auto base = registry::optimizer_kernel(reference_builtin(e.slot));
  for (const auto& c : optimizer_cases()) {
    struct State {
      torch::Tensor p, m, v;
    };
    auto fresh = [&](torch::ScalarType t, const torch::Device& d) {
      return State{c.param.to(t).to(d).clone(), torch::zeros_like(c.param, torch::TensorOptions().dtype(t).device(d)),
                   torch::zeros_like(c.param, torch::TensorOptions().dtype(t).device(d))};
    };
    State rs = fresh(torch::kFloat64, torch::kCPU), ks = fresh(torch::kFloat32, o.device),
          bs = fresh(torch::kFloat32, o.device);
    const auto mask32 = c.decay_mask.to(torch::kFloat32).to(o.device);
    double err[3] = {0, 0, 0}, berr[3] = {0, 0, 0}, refmax[3] = {0, 0, 0};
    std::string threw;
    for (size_t step = 0; step < c.grads.size(); ++step) {
      plugin::AdamWStep h = c.hyper;
      h.step = static_cast<int64_t>(step) + 1;
      ref::adamw(rs.p, c.grads[step], rs.m, rs.v, c.decay_mask, h);
      const auto g32 = c.grads[step].to(torch::kFloat32).to(o.device);
      if (threw.empty()) {
        try {
          torch::NoGradGuard ng;
          cand(ks.p, g32, ks.m, ks.v, mask32, h);
        } catch (const std::exception& ex) {
          threw = first_line(ex.what());
        }
      }
      {
        torch::NoGradGuard ng;
        base(bs.p, g32, bs.m, bs.v, mask32, h);
      }
      const torch::Tensor* r3[3] = {&rs.p, &rs.m, &rs.v};
      const torch::Tensor* k3[3] = {&ks.p, &ks.m, &ks.v};
      const torch::Tensor* b3[3] = {&bs.p, &bs.m, &bs.v};
      for (int i = 0; i < 3; ++i) {
        const auto k64 = k3[i]->to(torch::kCPU).to(torch::kFloat64);
        err[i] = std::max(err[i], threw.empty() ? max_error(k64, *r3[i]) : kInf);
        berr[i] = std::max(berr[i], max_error(b3[i]->to(torch::kCPU).to(torch::kFloat64), *r3[i]));
        refmax[i] = std::max(refmax[i], max_abs(*r3[i]));
      }
    }
    const char* names[3] = {"param", "exp_avg", "exp_avg_sq"};
    Case cs{c.name, c.shape, {}};
    for (int i = 0; i < 3; ++i)
      report.rows.push_back(row_for(e, knob, cs,
                                    std::string(names[i]) + " (max over the steps)" +
                                        (threw.empty() ? "" : " (threw: " + threw + ")"),
                                    "fp32", err[i], berr[i], kGradientFactor, refmax[i]));
  }
}

}  // namespace

const char* reference_builtin(registry::Slot slot) {
  switch (slot) {
    case Slot::Attention: return "math";
    case Slot::Activation: return "gelu";
    case Slot::LayerNorm: return "layer_norm";
    case Slot::Loss: return "cross_entropy";
    case Slot::Optimizer: return "adamw";
  }
  return "?";
}

ConformanceReport check(const std::vector<Target>& targets, const Options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  ConformanceReport report;
  report.device = o.device.str();
  const auto& traits = variants::traits(o.compute);
  const at::ScalarType compute_dtype =
      traits.autocast ? variants::scalar_type(*traits.autocast) : at::kFloat;
  std::optional<variants::Precision> variant_prec;
  if (traits.autocast) {
    variants::PrecisionConfig pc;
    pc.compute = o.compute;
    variant_prec.emplace(pc, o.device);
  }
  for (const auto& t : targets) {
    const auto& e = t.entry;
    report.kernels.push_back(std::string(registry::slot_name(e.slot)) + " \"" + e.name + "\"");
    torch::manual_seed(o.seed);  // the same inputs for every kernel of a slot
    // Under autocast two attention kernels round apart whatever they declare
    // (variants::attention_change_knob): held to the built-in at the variant's precision.
    config::Knob knob = e.knob;
    if (e.slot == Slot::Attention && traits.autocast) knob = config::Knob::Approximate;
    if (e.slot == Slot::Optimizer) {
      check_optimizer(e, knob, o, report);
      continue;
    }
    // An exact kernel is the same math: held to the built-in's fp32 error, both run in fp32.
    const bool at_variant_precision = knob == config::Knob::Approximate && variant_prec;
    check_slot(e, knob, o, at_variant_precision ? &*variant_prec : nullptr,
               at_variant_precision ? compute_dtype : at::kFloat, report);
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace lockstep::conformance
