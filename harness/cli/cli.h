// The command line (CLI11). The commands live in cmd_*.cpp files, grouped by what they drive
// (cmd_run: run, calibrate; cmd_compare: compare, bisect, demo; cmd_diagnose: diagnose, stages,
// trace-check; cmd_config, cmd_history, cmd_scale), each adding its commands through one of the
// registration functions below; the handlers parse flags, call into the harness and pick the
// exit code. No formatting of results happens in the runner: commands hand results to reporters.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace lockstep::cli {

int main(int argc, char** argv);

// A command's action returns the process exit code (harness/util/exit_codes.h).
using Action = std::function<int()>;

// Registration functions, one per cmd_*.cpp.
void add_config_commands(CLI::App& app, Action& action);
void add_run_command(CLI::App& app, Action& action);
void add_calibrate_command(CLI::App& app, Action& action);
void add_demo_command(CLI::App& app, Action& action);
void add_compare_command(CLI::App& app, Action& action);
void add_bisect_command(CLI::App& app, Action& action);
void add_history_command(CLI::App& app, Action& action);    // history list|show|export|prune|report
void add_diagnose_commands(CLI::App& app, Action& action);  // diagnose, stages, trace-check
void add_scale_command(CLI::App& app, Action& action);      // strong/weak scaling, Amdahl fit
void add_variants_command(CLI::App& app, Action& action);   // the implementation registry
void add_conformance_command(CLI::App& app, Action& action);  // kernels against their exact math
void add_serve_commands(CLI::App& app, Action& action);  // serve, serve-capacity

// `compare` on two serving configs (cmd_serve.cpp): the exit code, or nullopt when neither config
// serves (a training comparison). One serving and one not: UsageError. The policy is resolved
// as for training (--policy FILE, else the variant's [gate]); repeats (0 = gate.repeats) are the
// window pairs, "auto" (compare::kAutoRepeats) is refused. Recorded in the history database
// `history_db` (mode "serve") unless `record` is false.
std::optional<int> compare_serving(const std::string& baseline, const std::string& variant,
                                   const std::vector<std::string>& bsets,
                                   const std::vector<std::string>& vsets, int64_t repeats,
                                   const std::string& policy_file, const std::string& out_dir,
                                   const std::string& history_db, bool record);

}  // namespace lockstep::cli
