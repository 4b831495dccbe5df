#include "harness/kernels/registry.h"

#include <mutex>
#include <sstream>
#include <vector>

#include "harness/kernels/kernel_table.h"

namespace lockstep::registry {
namespace {

std::string shape_of(const torch::Tensor& t) {
  std::ostringstream o;
  o << t.sizes();
  return o.str();
}

std::string who(Slot slot, const std::string& name, const std::string& origin) {
  return std::string(slot_name(slot)) + " \"" + name + "\" (" +
         (origin.empty() ? std::string("built in") : "from " + origin) + ")";
}

// Runs a kernel; an exception becomes a KernelError naming it.
template <typename F>
auto guarded(Slot slot, const std::string& name, const std::string& origin, F&& f) {
  try {
    return f();
  } catch (const KernelError&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));  // c10::Error appends a backtrace
    throw KernelError(who(slot, name, origin) + " threw: " + what);
  }
}

void expect_shape(Slot slot, const std::string& name, const std::string& origin,
                  const torch::Tensor& out, at::IntArrayRef want) {
  if (!out.defined())
    throw KernelError(who(slot, name, origin) + " returned an undefined tensor");
  if (out.sizes() != want) {
    std::ostringstream o;
    o << want;
    throw KernelError(who(slot, name, origin) + " returned shape " + shape_of(out) +
                      ", expected " + o.str());
  }
}

const KernelEntry& entry_for(const config::Config& cfg, Slot slot) {
  auto info = selected(cfg, slot);
  if (!info)  // the config's checks ran against this catalog: only a broken install gets here
    throw std::logic_error(std::string("no ") + slot_name(slot) + " \"" +
                           cfg.str(selecting_key(slot)) + "\" registered");
  return KernelTable::global().get(slot, info->name, info->origin);
}

}  // namespace

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_builtins();
    Catalog::global().set_loader(load_plugin_file);
    Catalog::global().mark_installed();
  });
}

Kernels kernels_for(const config::Config& cfg) {
  Kernels k;
  {
    const auto& e = entry_for(cfg, Slot::Attention);
    k.attention = [fn = e.attention, name = e.name, origin = e.origin](
                      const torch::Tensor& q, const torch::Tensor& kk, const torch::Tensor& v) {
      auto out = guarded(Slot::Attention, name, origin, [&] { return fn(q, kk, v); });
      expect_shape(Slot::Attention, name, origin, out, q.sizes());
      return out;
    };
  }
  {
    const auto& e = entry_for(cfg, Slot::Activation);
    k.activation = [fn = e.activation, name = e.name, origin = e.origin](
                       const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
      auto out = guarded(Slot::Activation, name, origin, [&] { return fn(x, w, b); });
      expect_shape(Slot::Activation, name, origin, out, {x.size(0), w.size(0)});
      return out;
    };
  }
  {
    const auto& e = entry_for(cfg, Slot::LayerNorm);
    k.layer_norm = [fn = e.layer_norm, name = e.name, origin = e.origin](
                       const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                       double eps) {
      auto out = guarded(Slot::LayerNorm, name, origin, [&] { return fn(x, w, b, eps); });
      expect_shape(Slot::LayerNorm, name, origin, out, x.sizes());
      return out;
    };
  }
  {
    const auto& e = entry_for(cfg, Slot::Optimizer);
    k.optimizer = [fn = e.optimizer, name = e.name, origin = e.origin](
                      torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m,
                      torch::Tensor& v, const torch::Tensor& decay, const plugin::AdamWStep& s) {
      const auto want = p.sizes().vec();
      guarded(Slot::Optimizer, name, origin, [&] { fn(p, g, m, v, decay, s); });
      for (const auto* t : {&p, &m, &v}) expect_shape(Slot::Optimizer, name, origin, *t, want);
    };
  }
  {
    const auto& e = entry_for(cfg, Slot::Loss);
    k.loss = [fn = e.loss, name = e.name, origin = e.origin](const torch::Tensor& logits,
                                                              const torch::Tensor& targets) {
      auto out = guarded(Slot::Loss, name, origin, [&] { return fn(logits, targets); });
      expect_shape(Slot::Loss, name, origin, out, {});
      return out;
    };
  }
  return k;
}

plugin::AttentionFn attention_kernel(const std::string& name, const std::string& origin) {
  return KernelTable::global().get(Slot::Attention, name, origin).attention;
}
plugin::ActivationFn activation_kernel(const std::string& name, const std::string& origin) {
  return KernelTable::global().get(Slot::Activation, name, origin).activation;
}
plugin::LayerNormFn layer_norm_kernel(const std::string& name, const std::string& origin) {
  return KernelTable::global().get(Slot::LayerNorm, name, origin).layer_norm;
}
plugin::OptimizerFn optimizer_kernel(const std::string& name, const std::string& origin) {
  return KernelTable::global().get(Slot::Optimizer, name, origin).optimizer;
}
plugin::LossFn loss_kernel(const std::string& name, const std::string& origin) {
  return KernelTable::global().get(Slot::Loss, name, origin).loss;
}

}  // namespace lockstep::registry
