#include "harness/kernels/kernel_table.h"

#include <stdexcept>

namespace lockstep::registry {
namespace {

config::Knob knob_of(plugin::Knob k) {
  return k == plugin::Knob::Approximate ? config::Knob::Approximate : config::Knob::Exact;
}

}  // namespace

KernelTable& KernelTable::global() {
  static KernelTable t;
  return t;
}

const KernelEntry& KernelTable::get(Slot slot, const std::string& name,
                                    const std::string& origin) const {
  for (const auto& e : entries_)
    if (e.slot == slot && e.name == name && e.origin == origin) return e;
  throw std::runtime_error(std::string("no ") + slot_name(slot) + " \"" + name + "\" registered" +
                           (origin.empty() ? " as a built-in" : " by " + origin));
}

plugin::Entry StagingRegistry::stage(ImplInfo info, KernelEntry k) {
  // A duplicate is refused at once: the plugin's init sees the exception, its load fails.
  std::string why = Catalog::global().conflict(info);
  for (const auto& s : infos_)
    if (s.slot == info.slot && s.name == info.name)
      why = "registers " + std::string(slot_name(info.slot)) + " \"" + info.name + "\" twice";
  if (!why.empty()) throw RegistrationError(why);
  k.slot = info.slot, k.name = info.name, k.origin = origin_;
  infos_.push_back(std::move(info));
  kernels_.push_back(std::move(k));
  return plugin::Entry(*this, static_cast<int>(infos_.size()) - 1);
}

plugin::Entry StagingRegistry::attention(const std::string& name, plugin::Knob knob,
                                         plugin::AttentionFn fn, const std::string& description) {
  KernelEntry k;
  k.attention = std::move(fn);
  return stage({Slot::Attention, name, knob_of(knob), description, origin_, {}}, std::move(k));
}
plugin::Entry StagingRegistry::activation(const std::string& name, plugin::Knob knob,
                                          plugin::ActivationFn fn,
                                          const std::string& description) {
  KernelEntry k;
  k.activation = std::move(fn);
  return stage({Slot::Activation, name, knob_of(knob), description, origin_, {}}, std::move(k));
}
plugin::Entry StagingRegistry::layer_norm(const std::string& name, plugin::Knob knob,
                                          plugin::LayerNormFn fn,
                                          const std::string& description) {
  KernelEntry k;
  k.layer_norm = std::move(fn);
  return stage({Slot::LayerNorm, name, knob_of(knob), description, origin_, {}}, std::move(k));
}
plugin::Entry StagingRegistry::optimizer(const std::string& name, plugin::Knob knob,
                                         plugin::OptimizerFn fn, const std::string& description) {
  KernelEntry k;
  k.optimizer = std::move(fn);
  return stage({Slot::Optimizer, name, knob_of(knob), description, origin_, {}}, std::move(k));
}
plugin::Entry StagingRegistry::loss(const std::string& name, plugin::Knob knob,
                                    plugin::LossFn fn, const std::string& description) {
  KernelEntry k;
  k.loss = std::move(fn);
  return stage({Slot::Loss, name, knob_of(knob), description, origin_, {}}, std::move(k));
}

void StagingRegistry::restrict_devices(int entry_id, std::vector<std::string> devices) {
  if (entry_id < 0 || entry_id >= static_cast<int>(infos_.size()))
    throw RegistrationError("devices(): not an entry of this registry");
  for (const auto& d : devices)
    if (d != "cpu" && d != "cuda")
      throw RegistrationError(std::string(slot_name(infos_[entry_id].slot)) + " \"" +
                              infos_[entry_id].name + "\": unknown device \"" + d +
                              "\" (cpu | cuda)");
  infos_[static_cast<size_t>(entry_id)].devices = std::move(devices);
}

void StagingRegistry::commit() {
  for (size_t i = 0; i < infos_.size(); ++i) {
    Catalog::global().add(infos_[i]);
    KernelTable::global().add(std::move(kernels_[i]));
  }
  infos_.clear();
  kernels_.clear();
}

}  // namespace lockstep::registry
