// The registry of implementations, LibTorch side: the kernels behind the catalog's names
// (harness/registry/catalog.h). Built-ins (builtins.cpp) and plugins (plugin_loader.cpp) register
// through the same lockstep::plugin::Registry interface (include/lockstep/plugin.h); a run asks
// for the kernels its config selects, each wrapped with the run-time checks (a kernel that throws
// or returns the wrong shape fails the run naming the slot and the name).
//
// Layering: this folder binds names to callables, so it sits above variants/ and workloads/ (whose
// kernels it registers) and below harness/train (which asks it for them). Config sections never
// include it: they name kernels through the catalog (harness/registry/), which is LibTorch-free
// and depends on harness/config only. Both halves share the namespace lockstep::registry.
#pragma once

#include <stdexcept>
#include <string>

#include "harness/config/config.h"
#include "harness/kernels/install.h"
#include "harness/registry/catalog.h"
#include "include/lockstep/plugin.h"

namespace lockstep::registry {

// The kernels a config selects, checked at every call.
struct Kernels {
  plugin::AttentionFn attention;
  plugin::ActivationFn activation;
  plugin::LayerNormFn layer_norm;
  plugin::OptimizerFn optimizer;
  plugin::LossFn loss;
};
Kernels kernels_for(const config::Config& cfg);

// One kernel, unchecked (tests compare a plugin's kernels with the built-ins through this).
// Throws std::runtime_error when nothing of that name is registered from `origin` ("" = built in).
plugin::AttentionFn attention_kernel(const std::string& name, const std::string& origin = "");
plugin::ActivationFn activation_kernel(const std::string& name, const std::string& origin = "");
plugin::LayerNormFn layer_norm_kernel(const std::string& name, const std::string& origin = "");
plugin::OptimizerFn optimizer_kernel(const std::string& name, const std::string& origin = "");
plugin::LossFn loss_kernel(const std::string& name, const std::string& origin = "");

// A kernel failed at run time: it threw, or returned a tensor of the wrong shape. what() names
// the slot, the entry and its origin; the trainer adds the step (exit 3).
struct KernelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Loads a plugin file into this process (dlopen, ABI and LibTorch checks, its init) and returns
// its identity; throws std::runtime_error with a one-line reason. Catalog::load_plugin calls it.
PluginFile load_plugin_file(const std::string& file);

}  // namespace lockstep::registry
