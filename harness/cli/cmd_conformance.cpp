// `lockstep conformance CONFIG [--plugin FILE]... [--all] [--set k=v]... [--json FILE] [--quiet]`:
// the kernels a config selects (or a plugin's, or every registered one) against their slots' exact
// math (harness/conformance/check.h), on CONFIG's device, precision and model shapes. Exit 0 when
// every kernel passes, 1 when one fails, 2 on bad input. `compare` runs it on the variant.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>

#include "harness/cli/cli.h"
#include "harness/cli/plugin_flags.h"
#include "harness/conformance/check.h"
#include "harness/config/config.h"
#include "harness/registry/catalog.h"
#include "harness/train/device.h"
#include "harness/util/exit_codes.h"
#include "variants/variant_config.h"

namespace lockstep::cli {
namespace fs = std::filesystem;

namespace {

bool runs_on(const registry::ImplInfo& e, const std::string& device) {
  if (e.devices.empty()) return true;
  for (const auto& d : e.devices)
    if (d == device) return true;
  return false;
}

}  // namespace

void add_conformance_command(CLI::App& app, Action& action) {
  struct Opts {
    std::string config, json;
    std::vector<std::string> plugins, sets;
    bool all = false, quiet = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "conformance",
      "Check kernels against their slot's exact math on inputs built to expose errors");
  cmd->add_option("config", o->config, "the config whose device, precision and shapes apply")->required();
  cmd->add_option("--plugin", o->plugins, "check every kernel this plugin library registers (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--all", o->all, "check every implementation registered for this device");
  cmd->add_option("--set", o->sets, "override a config key: section.key=value (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--json", o->json, "also write the result as JSON to this file");
  cmd->add_flag("--quiet", o->quiet, "print the verdict line only");
  cmd->callback([&action, o] {
    action = [o] {
      const auto cfg = config::Config::load(o->config, o->sets);
      auto& cat = registry::Catalog::global();
      std::vector<std::string> files = load_plugin_flags(o->plugins);
      for (const auto& f : registry::plugin_files(cfg)) files.push_back(f.file);
      const std::string device = cfg.str("run.device");
      std::vector<conformance::Target> targets;
      std::vector<std::string> skipped;
      for (auto slot : registry::all_slots()) {
        std::vector<registry::ImplInfo> chosen;
        if (!o->plugins.empty() || o->all) {
          for (const auto& e : cat.visible(slot, files))
            if (o->all || std::find(o->plugins.begin(), o->plugins.end(), e.origin) != o->plugins.end() ||
                std::any_of(o->plugins.begin(), o->plugins.end(), [&](const std::string& p) {
                  return fs::absolute(p).lexically_normal().string() == e.origin;
                }))
              chosen.push_back(e);
        } else if (auto e = registry::selected(cfg, slot);
                   e && !(e->builtin() && e->name == conformance::reference_builtin(slot))) {
          chosen.push_back(*e);
        }
        for (auto& e : chosen) {
          if (runs_on(e, device))
            targets.push_back({e});
          else
            skipped.push_back(std::string(registry::slot_name(slot)) + " \"" + e.name + "\"");
        }
      }
      if (targets.empty()) {
        std::cout << "conformance: nothing to check (" << o->config
                  << " selects the reference built-ins; --all checks every implementation)\n";
        return kExitPass;
      }
      conformance::Options opts;
      opts.device = train::select_device(device, dist::RankInfo{});
      opts.compute = variants::PrecisionConfig::from(cfg).compute;
      opts.model = workloads::ModelConfig::from(cfg);
      opts.seed = static_cast<uint64_t>(cfg.integer("run.seed"));
      const auto report = conformance::check(targets, opts);
      if (!o->json.empty()) write_conformance(o->json, report);
      if (!o->quiet) {
        for (const auto& k : report.kernels) {
          size_t n = 0, failed = 0;
          for (const auto& r : report.rows)
            if (std::string(r.slot) + " \"" + r.kernel + "\"" == k) ++n, failed += !r.passed;
          std::cout << k << ": " << n << " checks, " << (failed ? std::to_string(failed) + " FAILED" : "all pass")
                    << "\n";
        }
        for (const auto& r : report.rows)
          if (!r.passed) std::cout << "  FAIL " << r.verdict_line() << "\n";
        for (const auto& s : skipped) std::cout << "  skipped " << s << ": not on " << device << "\n";
      }
      const auto* w = report.worst();
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.1f s", report.seconds);
      std::cout << "conformance: " << (report.passed() ? "PASS" : "FAIL") << " (" << report.kernels.size()
                << " kernel(s), " << report.rows.size() << " checks, " << secs << " on "
                << report.device << ")" << (w && !report.passed() ? ": " + w->verdict_line() : "")
                << "\n";
      return report.passed() ? kExitPass : kExitGateFailed;
    };
  });
}

}  // namespace lockstep::cli
