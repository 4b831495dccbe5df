// Inside the registry: the table of kernels by (slot, name, origin), and the implementation of
// lockstep::plugin::Registry that built-ins and plugins register through. A registration is
// staged and committed (catalog entry + kernel) only once the whole init succeeded, so a plugin
// whose init throws leaves nothing behind.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "harness/registry/catalog.h"
#include "include/lockstep/plugin.h"

namespace lockstep::registry {

struct KernelEntry {
  Slot slot = Slot::Attention;
  std::string name, origin;
  plugin::AttentionFn attention;
  plugin::ActivationFn activation;
  plugin::LayerNormFn layer_norm;
  plugin::OptimizerFn optimizer;
  plugin::LossFn loss;
};

// A registration the registry refuses (a duplicate name, an unknown device): thrown into the
// registering init, so that a plugin's load fails with this reason.
struct RegistrationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class KernelTable {
 public:
  static KernelTable& global();
  void add(KernelEntry e) { entries_.push_back(std::move(e)); }
  // Throws std::runtime_error when there is no such entry.
  const KernelEntry& get(Slot slot, const std::string& name, const std::string& origin) const;

 private:
  std::vector<KernelEntry> entries_;
};

// Collects one origin's registrations; commit() checks them against the catalog and adds them.
class StagingRegistry final : public plugin::Registry {
 public:
  explicit StagingRegistry(std::string origin) : origin_(std::move(origin)) {}

  plugin::Entry attention(const std::string& name, plugin::Knob knob, plugin::AttentionFn fn,
                          const std::string& description) override;
  plugin::Entry activation(const std::string& name, plugin::Knob knob, plugin::ActivationFn fn,
                           const std::string& description) override;
  plugin::Entry layer_norm(const std::string& name, plugin::Knob knob, plugin::LayerNormFn fn,
                           const std::string& description) override;
  plugin::Entry optimizer(const std::string& name, plugin::Knob knob, plugin::OptimizerFn fn,
                          const std::string& description) override;
  plugin::Entry loss(const std::string& name, plugin::Knob knob, plugin::LossFn fn,
                     const std::string& description) override;
  void restrict_devices(int entry_id, std::vector<std::string> devices) override;

  // Adds everything staged to the catalog and the kernel table; throws std::runtime_error (and
  // adds nothing) for a duplicate name.
  void commit();

 private:
  plugin::Entry stage(ImplInfo info, KernelEntry k);
  std::string origin_;
  std::vector<ImplInfo> infos_;
  std::vector<KernelEntry> kernels_;
};

// Lockstep's own implementations, registered through the plugin interface (builtins.cpp).
void register_builtins();

}  // namespace lockstep::registry
