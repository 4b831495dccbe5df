// The catalog of implementations: for each pluggable slot (attention, activation, layer_norm,
// optimizer, loss), the named implementations this process knows, with the knob class each
// declares, a one-line description and where it came from (built in, or a plugin file and its
// SHA-256). LibTorch-free: config validation, `config diff` and the comparison's knob
// classification read it; the kernels themselves live in the LibTorch-side registry
// (harness/kernels/registry.h), which fills this catalog as built-ins and plugins register.
//
// A config sees the built-ins plus the plugins its own `[plugins] load` names: the same name may
// come from two plugin files as long as no one config loads both (two builds of one kernel, one
// per arm).
//
// Programs without LibTorch (the core tests, the config fuzzer) have no kernels: until a
// registry is installed (Catalog::installed()), implementation names and plugin files are not
// checked. The lockstep binary installs its registry before it reads any config.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/config/config.h"

namespace lockstep::registry {

enum class Slot { Attention, Activation, LayerNorm, Optimizer, Loss };

const std::vector<Slot>& all_slots();
const char* slot_name(Slot s);     // "attention" | "activation" | "layer_norm" | ...
const char* knob_name(config::Knob k);  // "exact" | "approximate" (for listings)

struct ImplInfo {
  Slot slot = Slot::Attention;
  std::string name;
  config::Knob knob = config::Knob::Exact;  // Exact or Approximate
  std::string description;                  // one line
  std::string origin;                       // "" = built in; else the plugin file (absolute)
  std::vector<std::string> devices;         // where it runs ("cpu", "cuda"); empty = anywhere
  bool builtin() const { return origin.empty(); }
};

struct PluginFile {
  std::string file;    // absolute path, as loaded
  std::string sha256;  // of the file's bytes when it was loaded
};

// Loads a plugin file (absolute path) into this process, registering its entries; returns its
// identity. Throws std::runtime_error with a one-line reason (no entry point, another ABI, a
// duplicate name, an exception in its init...). Loading a file twice loads it once.
using PluginLoader = std::function<PluginFile(const std::string& file)>;

class Catalog {
 public:
  static Catalog& global();

  // Registration (the LibTorch-side registry calls these). Throws std::runtime_error for a name
  // the same origin registered already, or a plugin's name that a built-in has.
  void add(ImplInfo info);
  // Why `info` cannot be added ("" = it can).
  std::string conflict(const ImplInfo& info) const;
  void set_loader(PluginLoader loader);
  void mark_installed() { installed_ = true; }
  bool installed() const { return installed_; }

  PluginFile load_plugin(const std::string& file);  // through the loader
  std::optional<PluginFile> plugin(const std::string& file) const;

  // What a config with these plugin files may select.
  std::vector<ImplInfo> visible(Slot slot, const std::vector<std::string>& plugin_files) const;
  std::optional<ImplInfo> find(Slot slot, const std::string& name,
                               const std::vector<std::string>& plugin_files) const;
  const std::vector<ImplInfo>& entries() const { return entries_; }

 private:
  std::vector<ImplInfo> entries_;
  std::vector<PluginFile> plugins_;
  PluginLoader loader_;
  bool installed_ = false;
};

// The `[plugins]` section: `load`, the plugin files (relative to the config file that names them,
// held absolute in the effective config). Its finalize loads them.
const config::SectionSchema& plugins_schema();

// A key that selects an implementation of `slot` by name: validated against the catalog
// (unknown name -> a config error listing the names, with "did you mean"; an entry that refuses
// the run's device -> a config error), and judged in a comparison by the knob classes of the
// entries it selects in the two configs.
config::KeySpec impl_key(Slot slot, std::string name, std::string def, std::string doc);

// The entry a config selects for a slot, and the plugin files it loads (with their SHA-256).
// The key is the one that selects the slot ("attention.impl", "model.activation", ...).
const char* selecting_key(Slot slot);
std::optional<ImplInfo> selected(const config::Config& c, Slot slot);
std::vector<PluginFile> plugin_files(const config::Config& c);

}  // namespace lockstep::registry
