#include "harness/cli/cli.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "harness/config/config.h"
#include "harness/exit_codes.h"

namespace lockstep::cli {

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
  add_demo_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
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
