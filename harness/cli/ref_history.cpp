#include "harness/cli/ref_history.h"

#include <cmath>
#include <filesystem>
#include <system_error>

#include "harness/finish.h"
#include "harness/history/store.h"
#include "harness/util/files.h"

namespace lockstep::cli {
namespace fs = std::filesystem;

namespace {

// The arm's full run as a history run of its commit: the timing repeats' medians where the
// comparison timed them (they, not the untimed full run, are the arm's speed).
RunSummary ref_arm_summary(const compare::ArmResult& a, const compare::GitCommit& c, bool timed) {
  RunSummary s = a.alignment_run;
  s.env["git_commit"] = c.sha;
  s.env["git_branch"] = c.ref;
  if (timed && std::isfinite(a.tokens_per_sec)) {
    s.tokens_per_sec = a.tokens_per_sec;
    if (a.mfu) s.mfu = a.mfu;
    if (std::isfinite(a.step_ms.p99)) s.step_ms = a.step_ms;
  }
  return s;
}

std::string arm_config_toml(const std::string& run_dir) {
  std::error_code ec;
  const fs::path p = fs::path(run_dir) / "config.toml";
  if (run_dir.empty() || !fs::exists(p, ec)) return "";
  try {
    return util::read_file(p);
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

void record_ref_arms(const compare::CompareResult& r, const std::string& history_db) {
  if (!r.git_refs) return;
  const auto& g = *r.git_refs;
  const std::pair<const compare::ArmResult*, const compare::GitCommit*> arms[] = {
      {&r.baseline, &g.base}, {&r.variant, &g.head}};
  for (const auto& [arm, commit] : arms) {
    if (arm->alignment_run.steps == 0) continue;  // it never ran (a failed start, a config error)
    const auto s = ref_arm_summary(*arm, *commit, r.timed);
    const std::string what = "the " + arm->label + " arm's run (" + commit->sha.substr(0, 10) + ")";
    record_in_history(history_db, what.c_str(), [&](const fs::path& db) {
      return history::try_record_run(db, s, arm_config_toml(arm->run_dir), arm->loss_curve,
                                     fs::absolute(arm->run_dir).string());
    });
  }
}

}  // namespace lockstep::cli
