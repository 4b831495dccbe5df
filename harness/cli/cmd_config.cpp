// `lockstep config show FILE`, `lockstep config diff A B` and `lockstep config keys`.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "harness/cli/cli.h"
#include "harness/config/config.h"
#include "harness/exit_codes.h"
#include "harness/registry/catalog.h"

namespace lockstep::cli {

void add_config_commands(CLI::App& app, Action& action) {
  auto* cfg = app.add_subcommand(
      "config", "Inspect configs: the effective values, and what a variant changes");
  cfg->require_subcommand(1);

  struct ShowOpts {
    std::string file;
    std::vector<std::string> sets;
    bool plain = false;
  };
  auto so = std::make_shared<ShowOpts>();
  auto* show =
      cfg->add_subcommand("show", "Print the effective config (extends resolved, defaults filled)");
  show->add_option("FILE", so->file, "config file")->required();
  show->add_option("--set", so->sets, "override: section.key=value (repeatable)")
      ->allow_extra_args(false);
  show->add_flag("--plain", so->plain, "no '# default' / '# from' annotations");
  show->callback([&action, so] {
    action = [so] {
      auto c = config::Config::load(so->file, so->sets);
      std::cout << "# effective config of " << c.path() << " (hash " << c.hash() << ")\n"
                << c.to_toml(!so->plain);

      return kExitPass;
    };
  });

  auto* keys = cfg->add_subcommand(
      "keys", "Print every config section and key (type, default, range, meaning) as Markdown");
  keys->callback([&action] {
    action = [] {
      std::cout << config::keys_markdown();
      return kExitPass;
    };
  });

  struct DiffOpts {
    std::string a, b;
  };
  auto dop = std::make_shared<DiffOpts>();
  auto* d = cfg->add_subcommand("diff", "Print the keys whose effective values differ");
  d->add_option("A", dop->a, "baseline config")->required();
  d->add_option("B", dop->b, "variant config")->required();
  d->callback([&action, dop] {
    action = [dop] {
      auto ca = config::Config::load(dop->a), cb = config::Config::load(dop->b);
      auto changes = config::diff(ca, cb);
      if (changes.empty()) std::cout << "no differences\n";
      for (const auto& ch : changes)
        std::cout << ch.key << ": " << ch.before << " -> " << ch.after << "\n";
      // Which kernel builds each side runs: the file and its content hash.
      const auto pa = registry::plugin_files(ca), pb = registry::plugin_files(cb);
      if (!pa.empty() || !pb.empty())
        for (const auto& [side, list] : {std::pair{"A", &pa}, std::pair{"B", &pb}}) {
          std::cout << "plugins, " << side << ":";
          if (list->empty()) std::cout << " none";
          for (const auto& p : *list) std::cout << " " << p.file << " (sha256 " << p.sha256 << ")";
          std::cout << "\n";
        }
      return kExitPass;
    };
  });
}

}  // namespace lockstep::cli
