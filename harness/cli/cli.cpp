#include "harness/cli/cli.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "harness/config/config.h"
#include "harness/util/exit_codes.h"

namespace lockstep::cli {
namespace {

// The subcommand the user named, deepest first ("history report"); the app itself if none.
CLI::App* named_command(CLI::App& app) {
  CLI::App* sub = &app;
  while (!sub->get_subcommands().empty()) sub = sub->get_subcommands().front();
  return sub;
}

std::string command_path(CLI::App* sub) {
  std::string path;
  for (CLI::App* a = sub; a && a->get_parent(); a = a->get_parent())
    path = a->get_name() + (path.empty() ? "" : " " + path);
  return "lockstep" + (path.empty() ? "" : " " + path);
}

// CLI11's "The following arguments were not expected: 60 --steps" (its words, in reverse order)
// as one line that names the unknown option and the one meant: "lockstep scale: unknown option
// --steps (did you mean --steps-timed?)".
std::string unexpected_arguments(CLI::App& app, const std::string& what) {
  CLI::App* sub = named_command(app);
  const auto colon = what.find(": ");
  std::vector<std::string> args;
  std::string word;
  std::istringstream in(colon == std::string::npos ? "" : what.substr(colon + 2));
  while (in >> word) args.insert(args.begin(), word);
  for (const auto& a : args) {
    if (a.size() < 2 || a[0] != '-') continue;
    const std::string flag = a.substr(0, a.find('='));
    std::vector<std::string> names, prefixed;
    for (const CLI::App* c = sub; c; c = c->get_parent())
      for (const CLI::Option* o : c->get_options()) {
        for (const auto& l : o->get_lnames()) names.push_back("--" + l);
        for (const auto& s : o->get_snames()) names.push_back("-" + s);
      }
    for (const auto& n : names)
      if (n.rfind(flag, 0) == 0) prefixed.push_back(n);
    std::string hint = prefixed.size() == 1 ? prefixed.front() : config::did_you_mean(flag, names);
    return command_path(sub) + ": unknown option " + flag +
           (hint.empty() ? "" : " (did you mean " + hint + "?)") + "; see " + command_path(sub) +
           " --help";
  }
  std::string list;
  for (const auto& a : args) list += (list.empty() ? "" : " ") + a;
  return command_path(sub) + ": unexpected argument" + (args.size() == 1 ? " " : "s ") + list +
         "; see " + command_path(sub) + " --help";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "lockstep: does this training optimization really help, and is it still the same math?"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("lockstep 0.1"));
  Action action;
  add_config_commands(app, action);
  add_run_command(app, action);
  add_calibrate_command(app, action);
  add_compare_command(app, action);
  add_bisect_command(app, action);
  add_history_command(app, action);
  add_diagnose_commands(app, action);
  add_scale_command(app, action);
  add_variants_command(app, action);
  add_conformance_command(app, action);
  add_serve_commands(app, action);
  add_demo_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    std::cerr << unexpected_arguments(app, e.what()) << "\n";
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  try {
    return action ? action() : kExitUsage;
  } catch (const config::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const UsageError& e) {
    std::cerr << "lockstep: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "lockstep: " << e.what() << "\n";
    return kExitRunFailed;
  }
}

}  // namespace lockstep::cli
