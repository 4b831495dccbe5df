#include "harness/registry/catalog.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace lockstep::registry {
namespace fs = std::filesystem;
using config::Knob;

namespace {

struct SlotInfo {
  Slot slot;
  const char* name;
  const char* key;  // the config key that selects it
};
constexpr SlotInfo kSlots[] = {
    {Slot::Attention, "attention", "attention.impl"},
    {Slot::Activation, "activation", "model.activation"},
    {Slot::LayerNorm, "layer_norm", "model.layer_norm"},
    {Slot::Optimizer, "optimizer", "optim.impl"},
    {Slot::Loss, "loss", "model.loss"},
};

bool visible_to(const ImplInfo& e, const std::vector<std::string>& files) {
  return e.builtin() || std::find(files.begin(), files.end(), e.origin) != files.end();
}

std::string shown(const ImplInfo& e) {
  return "\"" + e.name + "\"" + (e.builtin() ? std::string() : " (from " + e.origin + ")");
}

// Approximate when either side is; Exact otherwise (also when a side is unknown: no catalog).
Knob combine(const std::optional<ImplInfo>& a, const std::optional<ImplInfo>& b) {
  for (const auto* e : {&a, &b})
    if (*e && (*e)->knob == Knob::Approximate) return Knob::Approximate;
  return Knob::Exact;
}

// plugins.load as absolute paths: relative to the file that set it (the working directory for a
// --set), so the effective config written into a run folder names the same files.
void resolve_paths(config::Config& c) {
  const std::string& origin = c.where("plugins.load").file;
  const fs::path dir = origin.rfind("<", 0) == 0 ? fs::path() : fs::path(origin).parent_path();
  config::StrList abs;
  bool changed = false;
  for (const auto& p : c.strings("plugins.load")) {
    fs::path f = p;
    if (!f.empty() && !f.is_absolute()) {
      std::error_code ec;
      f = fs::absolute(dir / f, ec).lexically_normal();
      changed = true;
    }
    abs.push_back(f.string());
  }
  if (changed) c.resolve("plugins.load", abs, "plugins.load");
}

void finalize_plugins(config::Config& c) {
  if (!c.is_set("plugins.load")) return;
  resolve_paths(c);
  auto& cat = Catalog::global();
  if (!cat.installed()) return;  // a LibTorch-free program: nothing to load kernels into
  const auto& files = c.strings("plugins.load");
  for (const auto& f : files) {
    if (std::count(files.begin(), files.end(), f) > 1)
      c.fail("plugins.load", f + ": listed twice");
    try {
      cat.load_plugin(f);
    } catch (const std::exception& e) {
      c.fail("plugins.load", f + ": " + e.what());
    }
  }
  // The builds, by content: derived from the files, or checked against the config's own list
  // (a run folder's config.toml pins them, so --resume refuses a rebuilt plugin).
  config::StrList hashes;
  for (const auto& f : files) hashes.push_back(cat.plugin(f)->sha256);
  if (!c.is_set("plugins.sha256")) {
    c.resolve("plugins.sha256", hashes, "plugins.load");
  } else {
    const auto& pinned = c.strings("plugins.sha256");
    if (pinned.size() != files.size())
      c.fail("plugins.sha256", "pins " + std::to_string(pinned.size()) + " hashes for " +
                                   std::to_string(files.size()) + " plugin files");
    for (size_t i = 0; i < files.size(); ++i)
      if (pinned[i] != hashes[i])
        c.fail("plugins.sha256", files[i] + " has sha256 " + hashes[i] + ", the config pins " +
                                     pinned[i] + " (the plugin was rebuilt)");
  }
  // Two of this config's plugins may not offer the same name for one slot.
  for (Slot s : all_slots()) {
    auto v = cat.visible(s, files);
    for (size_t i = 0; i < v.size(); ++i)
      for (size_t j = i + 1; j < v.size(); ++j)
        if (v[i].name == v[j].name)
          c.fail("plugins.load", v[i].origin + " and " + v[j].origin + " both register " +
                                     slot_name(s) + " \"" + v[i].name + "\"");
  }
}

}  // namespace

const std::vector<Slot>& all_slots() {
  static const std::vector<Slot> s{Slot::Attention, Slot::Activation, Slot::LayerNorm,
                                   Slot::Optimizer, Slot::Loss};
  return s;
}

const char* slot_name(Slot s) {
  for (const auto& i : kSlots)
    if (i.slot == s) return i.name;
  return "?";
}

const char* selecting_key(Slot s) {
  for (const auto& i : kSlots)
    if (i.slot == s) return i.key;
  return "?";
}

const char* knob_name(Knob k) {
  return k == Knob::Approximate ? "approximate" : k == Knob::Exact ? "exact" : "other";
}

Catalog& Catalog::global() {
  static Catalog c;
  return c;
}

std::string Catalog::conflict(const ImplInfo& info) const {
  const std::string what = std::string(slot_name(info.slot)) + " \"" + info.name + "\"";
  if (info.name.empty()) return std::string("registers an empty ") + slot_name(info.slot) + " name";
  if (info.knob != Knob::Exact && info.knob != Knob::Approximate)
    return what + ": the knob class must be exact or approximate";
  for (const auto& e : entries_) {
    if (e.slot != info.slot || e.name != info.name) continue;
    if (e.origin == info.origin) return "registers " + what + " twice";
    if (e.builtin() || info.builtin()) return "registers " + what + ", which is a built-in name";
  }
  return "";
}

void Catalog::add(ImplInfo info) {
  const std::string why = conflict(info);
  if (!why.empty()) throw std::runtime_error(why);
  entries_.push_back(std::move(info));
}

void Catalog::set_loader(PluginLoader loader) {
  loader_ = std::move(loader);
}

PluginFile Catalog::load_plugin(const std::string& file) {
  if (auto p = plugin(file)) return *p;
  if (!loader_) throw std::runtime_error("this program cannot load plugins");
  PluginFile p = loader_(file);
  plugins_.push_back(p);
  return p;
}

std::optional<PluginFile> Catalog::plugin(const std::string& file) const {
  for (const auto& p : plugins_)
    if (p.file == file) return p;
  return std::nullopt;
}

std::vector<ImplInfo> Catalog::visible(Slot slot, const std::vector<std::string>& files) const {
  std::vector<ImplInfo> out;
  for (const auto& e : entries_)
    if (e.slot == slot && visible_to(e, files)) out.push_back(e);
  return out;
}

std::optional<ImplInfo> Catalog::find(Slot slot, const std::string& name,
                                      const std::vector<std::string>& files) const {
  for (const auto& e : entries_)
    if (e.slot == slot && e.name == name && visible_to(e, files)) return e;
  return std::nullopt;
}

const config::SectionSchema& plugins_schema() {
  static const config::SectionSchema s{
      "plugins",
      "C++ plugins: shared libraries that register implementations (include/lockstep/plugin.h; "
      "`lockstep variants` lists them).",
      {
          // Loading a plugin changes nothing by itself; the keys that select its entries are the
          // knobs. The same name from another plugin file is judged by that entry's class.
          config::KeySpec::Strings("load", {},
                                   "shared libraries to load (paths relative to the config file)")
              .kind(Knob::None)
              .judged_by([](const config::Config& a, const config::Config& b) {
                Knob k = Knob::None;
                for (Slot s : all_slots()) {
                  if (a.str(selecting_key(s)) != b.str(selecting_key(s))) continue;
                  auto ea = selected(a, s), eb = selected(b, s);
                  if (!ea || !eb || ea->origin == eb->origin) continue;
                  if (combine(ea, eb) == Knob::Approximate) return Knob::Approximate;
                  k = Knob::Exact;
                }
                return k;
              }),
          // Part of the effective config (and so of its hash): a run names the exact builds.
          config::KeySpec::Strings("sha256", {},
                                   "SHA-256 of each loaded file, in order (derived; set it to pin "
                                   "the builds: a mismatch is a config error)")
              .kind(Knob::None),
      },
      finalize_plugins,
  };
  return s;
}

std::optional<ImplInfo> selected(const config::Config& c, Slot slot) {
  return Catalog::global().find(slot, c.str(selecting_key(slot)), c.strings("plugins.load"));
}

std::vector<PluginFile> plugin_files(const config::Config& c) {
  std::vector<PluginFile> out;
  for (const auto& f : c.strings("plugins.load"))
    out.push_back(Catalog::global().plugin(f).value_or(PluginFile{f, "unknown"}));
  return out;
}

config::KeySpec impl_key(Slot slot, std::string name, std::string def, std::string doc) {
  return config::KeySpec::Str(std::move(name), std::move(def), std::move(doc))
      .kind(Knob::Exact)
      .judged_by([slot](const config::Config& a, const config::Config& b) {
        return combine(selected(a, slot), selected(b, slot));
      })
      .checked_by([slot](const config::Config& c, const std::string& key) {
        const auto& cat = Catalog::global();
        if (!cat.installed()) return;
        const std::string& name = c.str(key);
        auto e = selected(c, slot);
        if (!e) {
          std::vector<std::string> names;
          std::string list;
          for (const auto& v : cat.visible(slot, c.strings("plugins.load"))) {
            names.push_back(v.name);
            list += (list.empty() ? "" : ", ") + v.name;
          }
          const std::string m = config::did_you_mean(name, names);
          c.fail(key, "\"" + name + "\" is not a registered " + slot_name(slot) +
                          " (registered: " + list + ")" +
                          (m.empty() ? "" : " (did you mean \"" + m + "\"?)"));
        }
        const std::string& device = c.str("run.device");
        if (!e->devices.empty() &&
            std::find(e->devices.begin(), e->devices.end(), device) == e->devices.end()) {
          std::string on;
          for (const auto& d : e->devices) on += (on.empty() ? "" : ", ") + d;
          c.fail(key, shown(*e) + " runs on " + on + " only, not on run.device = \"" + device +
                          "\"");
        }
      });
}

}  // namespace lockstep::registry
