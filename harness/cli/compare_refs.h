// `lockstep compare CONFIG --base-ref REF [--head-ref REF] [--repo DIR]`: one config at two git
// commits. Each commit is checked out into its own temporary worktree (harness/gitref), CONFIG is
// loaded from each, so its trainer (an external command's workdir, a plugin file) resolves inside
// its own checkout; baseline = the base commit, variant = the head commit. The comparison then
// runs as any other (harness/compare), and the report names both commits and the files that
// differ (CompareResult::git_refs). Both arms are recorded in the history under their commits.
#pragma once

#include <string>
#include <vector>

#include "harness/compare/comparison.h"
#include "harness/vocab/compare_result.h"

namespace lockstep::cli {

struct RefCompareOptions {
  std::string config;           // CONFIG as given
  std::string base_ref;         // --base-ref
  std::string head_ref = "HEAD";  // --head-ref
  bool head_ref_given = false;
  std::string repo;             // --repo ("": the repository holding CONFIG, else the CWD's)
  std::string alignment;        // --alignment exact|approximate|none ("": the head config's, else exact)
  std::string prepare;          // --prepare CMD, run by /bin/sh in each checkout before the arms
  std::vector<std::string> bsets, vsets;  // --set-baseline / --set-variant
};

// Runs the comparison; `req` carries everything else (out_dir, steps, repeats, policy, log,
// before_runs), its arms are filled here. Returns the exit code (finish_compare's). Throws
// UsageError / config::ConfigError (exit 2) for bad input, before any run and with no worktree
// left behind.
int compare_refs(const RefCompareOptions& o, compare::CompareRequest req,
                 const std::string& history_db, bool record);

// After the comparison (tested on its own): a change whose two values differ only by the
// checkouts' folders (external.workdir, a plugin path) is the checkout, not the config: dropped
// from the config diff and the changed knobs; every path into a checkout is written as git
// writes a file at a commit, REF:PATH.
void fold_checkouts(compare::CompareResult& r, const std::string& base_root,
                    const std::string& head_root, const std::string& base_ref,
                    const std::string& head_ref);

}  // namespace lockstep::cli
