#include "harness/finish.h"

#include <cstdio>
#include <functional>
#include <iostream>

#include "harness/compare/golden_file.h"
#include "harness/history/store.h"
#include "harness/util/exit_codes.h"
#include "harness/util/files.h"
#include "reports/reporter.h"
#include "reports/run_console.h"

namespace lockstep {
namespace fs = std::filesystem;

void record_in_history(const std::string& history_flag, const char* what,
                       const std::function<std::string(const fs::path& db)>& record) {
  const auto db = history::resolve_path(history_flag);
  const std::string err = record(db);
  if (!err.empty())
    std::cerr << "lockstep: warning: " << what << " not recorded in " << db.string() << ": " << err
              << "\n";
}

int finish_run(const FinishOptions& opts, const config::Config& cfg, const fs::path& out,
               const RunSummary& summary, const std::vector<StepRecord>& records,
               const std::string& who) {
  if (!opts.no_history) {
    std::vector<double> curve;
    for (const auto& r : records) curve.push_back(r.loss);
    record_in_history(opts.history, "run", [&](const fs::path& db) {
      return history::try_record_run(db, summary, cfg.to_toml(), curve, fs::absolute(out).string());
    });
  }
  if (!opts.export_losses.empty()) {  // format 2, no envelope yet (harness/export_envelope.h)
    compare::GoldenFile g;
    g.format = 2;
    for (const auto& k : compare::golden_environment_keys()) {
      auto it = summary.env.find(k);
      if (it != summary.env.end()) g.environment[k] = it->second;
    }
    for (const auto& r : records) g.curve.push_back(r.loss);
    util::write_atomic(opts.export_losses, compare::golden_text(g));
  }
  if (!opts.quiet) reports::print_run_summary(std::cout, summary, out);
  if (!summary.ok()) {
    std::cerr << who << ": run failed: " << summary.failure << "\n";
    return kExitRunFailed;
  }
  return kExitPass;
}

int finish_compare(const compare::CompareResult& r, const std::string& out,
                   const std::string& history_db, bool record) {
  auto files = reports::write_reports(r, out);
  std::cout << reports::make_reporter("console")->render(r);
  for (const auto& f : files) std::cout << "  " << f.string() << "\n";
  if (record) {
    std::vector<std::string> paths;
    for (const auto& f : files) paths.push_back(fs::absolute(f).string());
    record_in_history(history_db, "comparison", [&](const fs::path& db) {
      return history::try_record_compare(db, r, paths);
    });
  }
  return r.exit_code;
}

}  // namespace lockstep
