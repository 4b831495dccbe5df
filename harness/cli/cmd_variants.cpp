// `lockstep variants [--plugin FILE]...`: every implementation this lockstep can select, per slot
// (name, knob class, where it came from, one line of description), with a plugin's entries.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "harness/cli/cli.h"
#include "harness/cli/plugin_flags.h"
#include "harness/util/exit_codes.h"
#include "harness/registry/catalog.h"

namespace lockstep::cli {
namespace fs = std::filesystem;

void add_variants_command(CLI::App& app, Action& action) {
  struct Opts {
    std::vector<std::string> plugins;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "variants", "List every implementation per slot (knob class, origin, description)");
  cmd->add_option("--plugin", o->plugins, "also load this plugin library (repeatable)")
      ->allow_extra_args(false);
  cmd->callback([&action, o] {
    action = [o] {
      auto& cat = registry::Catalog::global();
      std::vector<std::string> files = load_plugin_flags(o->plugins);
      std::vector<registry::ImplInfo> rows;
      for (auto slot : registry::all_slots()) {
        auto v = cat.visible(slot, files);
        rows.insert(rows.end(), v.begin(), v.end());
      }
      size_t wn = 4, wo = 6;
      auto origin = [](const registry::ImplInfo& e) {
        return e.builtin() ? std::string("built-in") : fs::path(e.origin).filename().string();
      };
      for (const auto& e : rows) wn = std::max(wn, e.name.size()), wo = std::max(wo, origin(e).size());
      auto pad = [](std::string s, size_t w) { return s + std::string(w - std::min(w, s.size()), ' '); };
      std::cout << pad("slot", 11) << "  " << pad("name", wn) << "  " << pad("knob", 11) << "  "
                << pad("origin", wo) << "  description\n";
      for (const auto& e : rows) {
        std::string desc = e.description;
        if (!e.devices.empty()) {
          std::string on;
          for (const auto& d : e.devices) on += (on.empty() ? "" : ", ") + d;
          desc += " [" + on + " only]";
        }
        std::cout << pad(registry::slot_name(e.slot), 11) << "  " << pad(e.name, wn) << "  "
                  << pad(registry::knob_name(e.knob), 11) << "  " << pad(origin(e), wo) << "  "
                  << desc << "\n";
      }
      for (const auto& f : files) {
        auto p = cat.plugin(f);
        std::cout << "plugin " << f << "  sha256 " << (p ? p->sha256 : "?") << "\n";
      }
      return kExitPass;
    };
  });
}

}  // namespace lockstep::cli
