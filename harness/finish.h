// The last step of `lockstep run` and `lockstep compare`, one place for both: what is kept after
// the work (the history database, the loss file, the reports), what is printed, and the exit
// code. A failure to record in the history is a one-line warning, never the exit code.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "harness/config/config.h"
#include "harness/vocab/compare_result.h"
#include "harness/vocab/records.h"

namespace lockstep {

// Records one entry in the history database the flag names (history::resolve_path); `record`
// returns "" or why it could not, which becomes a one-line warning on stderr (never an error).
void record_in_history(const std::string& history_flag, const char* what,
                       const std::function<std::string(const std::filesystem::path& db)>& record);

// What finishing a run needs from `lockstep run`'s flags (harness/runner.h's RunRequest).
struct FinishOptions {
  std::string history;        // --history: the history database (default: history::resolve_path)
  bool no_history = false;    // --no-history: do not record the run
  std::string export_losses;  // --export-losses: write "step loss" lines here
  bool quiet = false;         // --quiet: no summary on stdout
};

// A finished run on rank 0, its summary written: recorded in the history (unless no_history),
// export_losses written, the summary printed; the exit code from its status. `who` names the
// process in the failure line.
int finish_run(const FinishOptions& opts, const config::Config& cfg,
               const std::filesystem::path& out, const RunSummary& summary,
               const std::vector<StepRecord>& records, const std::string& who);

// A judged comparison: its reports written into `out` and listed, the console report printed,
// recorded in the history database `history_db` (unless `record` is false); r.exit_code.
int finish_compare(const compare::CompareResult& r, const std::string& out,
                   const std::string& history_db, bool record);

}  // namespace lockstep
