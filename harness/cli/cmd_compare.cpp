// `lockstep compare`, `lockstep bisect` and `lockstep demo`.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <ctime>
#include <iostream>
#include <memory>

#include "harness/cli/cli.h"
#include "harness/cli/compare_out.h"
#include "harness/cli/compare_refs.h"
#include "harness/cli/out_dir.h"
#include "harness/cli/validators.h"
#include "harness/finish.h"
#include "harness/compare/bisect.h"
#include "harness/compare/comparison.h"
#include "harness/util/exit_codes.h"
#include "harness/history/store.h"
#include "harness/util/files.h"
#include "reports/bisect_console.h"
#include "reports/reporter.h"

namespace lockstep::cli {
namespace {

// --against-history: the latest recorded healthy run of the baseline's effective config (same
// config hash) on this machine. Throws UsageError (exit 2) when there is none.
compare::ReferenceCurve history_reference(const compare::CompareRequest& req,
                                          const config::Config& cfg,
                                          const std::string& history_db) {
  auto sets = req.baseline.sets;
  if (req.steps > 0) sets.push_back("run.steps=" + std::to_string(req.steps));  // for the hint
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const auto db = history::resolve_path(history_db);
  std::optional<history::ReferenceCurve> ref;
  try {
    ref = history::Store::open(db, false).latest_loss_curve(cfg.hash(), host);
  } catch (const std::exception& e) {
    throw UsageError("--against-history: " + std::string(e.what()));
  }
  if (!ref) {
    std::string record = "lockstep run " + req.baseline.config;
    for (const auto& s : sets) record += " --set " + s;
    throw UsageError("--against-history: no recorded run of config '" + cfg.str("run.name") +
                     "' (hash " + cfg.hash() + ") on host " + host + " in " + db.string() +
                     "; record one with `" + record + " --history " + db.string() + "`");
  }
  return {ref->curve, "history run #" + std::to_string(ref->id) + " (commit " +
                         ref->git_commit.substr(0, 10) + ", " + ref->recorded_at + ")"};
}

void progress_line(const std::string& s) {
  std::cerr << "[compare] " << s << std::endl;
}

}  // namespace

void add_compare_command(CLI::App& app, Action& action) {
  struct Opts {
    std::vector<std::string> configs;
    std::string baseline, variant, out, policy, golden;
    int64_t steps = 0, check_step = -1;
    std::string repeats;  // a positive integer or "auto"
    std::vector<std::string> bsets, vsets;
    std::string history;
    bool no_history = false, against_history = false, force = false;
    RefCompareOptions refs;  // --base-ref: CONFIG at two git commits (compare_refs.h)
  };
  auto o = std::make_shared<Opts>();
  auto* cmp = app.add_subcommand(
      "compare", "A/B-compare a variant against a baseline: same math? faster? P99 no worse?");
  cmp->add_option("CONFIGS", o->configs,
                  "BASELINE VARIANT (or only VARIANT with --golden, or CONFIG with --base-ref)")
      ->required()
      ->expected(1, -1);  // counted in the action, which says what it got (not CLI11's "At Most 2")
  cmp->add_option("--out", o->out, "report folder (default runs/<time>-compare-<variant>)");
  cmp->add_flag("--force", o->force,
                "replace an earlier comparison in --out (its reports and arms/; other files stay)");
  cmp->add_option("--steps", o->steps, "override run.steps of both arms")
      ->check(positive_integer());
  cmp->add_option("--check-step", o->check_step, "step whose loss must agree (default: the last)")
      ->check(non_negative_integer());
  cmp->add_option("--repeats", o->repeats,
                  "timing repeats per arm, or auto: until every timing check is decisive "
                  "(default gate.repeats = 5)")
      ->check(positive_integer_or_auto());
  cmp->add_option("--policy", o->policy, "a TOML file whose [gate] section is the policy to apply");
  cmp->add_option("--golden", o->golden,
                  "compare the variant's curve with these `step loss` lines (no timing verdict)");
  // One value per occurrence (repeatable): `--set-variant k=v A B` keeps A and B as CONFIGS.
  cmp->add_option("--set-baseline", o->bsets, "override a baseline key: section.key=value")
      ->allow_extra_args(false);
  cmp->add_option("--set-variant", o->vsets, "override a variant key: section.key=value")
      ->allow_extra_args(false);
  cmp->add_option("--history", o->history,
                  "history database (default: $LOCKSTEP_HISTORY, else runs/history.sqlite)");
  cmp->add_flag("--no-history", o->no_history,
                "do not record this comparison in the history database");
  cmp->add_flag("--against-history", o->against_history,
                "check the loss against the latest recorded run of the baseline config on this "
                "machine (the baseline is still re-run for timing)");
  cmp->add_option("--base-ref", o->refs.base_ref,
                  "compare CONFIG at two git commits: this one is the baseline (each checked out "
                  "into its own temporary worktree)");
  cmp->add_option("--head-ref", o->refs.head_ref,
                  "with --base-ref: the variant's commit (default HEAD; the working tree must "
                  "then have no uncommitted changes)");
  cmp->add_option("--repo", o->refs.repo,
                  "with --base-ref: the git repository (default: the one holding CONFIG, else "
                  "the current folder's)");
  cmp->add_option("--alignment", o->refs.alignment,
                  "with --base-ref: the loss alignment the head claims: exact (default) | "
                  "approximate | none (default: the head config's [gate] alignment, else exact)");
  cmp->add_option("--prepare", o->refs.prepare,
                  "with --base-ref: a shell command run in each checkout before the arms (e.g. "
                  "build the plugin CONFIG loads)");
  cmp->callback([&action, o, cmp] {
    o->refs.head_ref_given = cmp->count("--head-ref") > 0;
    const bool refs_only = o->refs.head_ref_given || cmp->count("--repo") > 0 ||
                           cmp->count("--alignment") > 0 || cmp->count("--prepare") > 0;
    action = [o, refs_only] {
      compare::CompareRequest req;
      if (!o->refs.base_ref.empty() || refs_only) {
        if (o->refs.base_ref.empty()) {
          std::cerr << "lockstep compare: --head-ref, --repo, --alignment and --prepare need "
                       "--base-ref REF\n";
          return kExitUsage;
        }
        if (o->configs.size() != 1 || !o->golden.empty() || o->against_history) {
          std::cerr << "lockstep compare: --base-ref takes one CONFIG (no --golden, no "
                       "--against-history); got "
                    << o->configs.size() << " configs\n";
          return kExitUsage;
        }
      }
      const bool refs = !o->refs.base_ref.empty();
      if (refs) o->configs.insert(o->configs.begin(), o->configs.front());  // the same file twice
      if (o->configs.size() > 2) {
        std::string got;
        for (const auto& c : o->configs) got += " " + c;
        std::cerr << "lockstep compare: takes two configs, BASELINE VARIANT (or --golden FILE "
                     "VARIANT); got "
                  << o->configs.size() << ":" << got << "\n";
        return kExitUsage;
      }
      if (o->golden.empty() != (o->configs.size() == 2)) {
        std::cerr << "lockstep compare: give BASELINE VARIANT, or --golden FILE VARIANT\n";
        return kExitUsage;
      }
      o->baseline = o->configs.size() == 2 ? o->configs[0] : "";
      o->variant = o->configs.back();
      if (o->golden.empty()) req.baseline = {"baseline", o->baseline, o->bsets};
      req.variant = {"variant", o->variant, o->vsets};
      req.golden_file = o->golden;
      req.steps = o->steps;
      req.check_step = o->check_step;
      req.repeats = o->repeats.empty()    ? 0
                    : o->repeats == "auto" ? compare::kAutoRepeats
                                           : std::stoll(o->repeats);
      req.policy_file = o->policy;
      check_out_dir(o->out);
      refuse_earlier_comparison(o->out, o->force);
      const std::string stem = std::filesystem::path(o->variant).stem().string();
      req.out_dir = o->out.empty() ? util::timestamped_run_dir("compare-" + stem).string() : o->out;
      if (o->golden.empty() && !refs)  // two services: windows in turns
        if (auto code = compare_serving(o->baseline, o->variant, o->bsets, o->vsets, req.repeats,
                                        o->policy, req.out_dir, o->history, !o->no_history))
          return *code;
      req.log = progress_line;
      if (o->force && !o->out.empty())
        req.before_runs = [out = req.out_dir] {
          const auto removed = remove_earlier_comparison(out);
          if (!removed.empty())
            progress_line("--force: removed the earlier comparison in " + out + " (" +
                          std::to_string(removed.size()) + " entries)");
        };
      if (o->against_history) {
        if (!o->golden.empty()) {
          std::cerr << "lockstep compare: --against-history needs BASELINE VARIANT, not --golden\n";
          return kExitUsage;
        }
        req.history_reference = [req, db = o->history](const config::Config& baseline) {
          return history_reference(req, baseline, db);
        };
      }
      if (refs) {
        auto ro = o->refs;
        ro.config = o->configs.front();
        ro.bsets = o->bsets;
        ro.vsets = o->vsets;
        return compare_refs(ro, req, o->history, !o->no_history);
      }
      auto result = compare::run_comparison(req);
      return finish_compare(result, req.out_dir, o->history, !o->no_history);
    };
  });
}

void add_bisect_command(CLI::App& app, Action& action) {
  struct Opts {
    std::string baseline, variant, out, policy;
    int64_t steps = 0, repeats = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* b = app.add_subcommand("bisect",
                               "For a variant that changes several knobs: try each alone and "
                               "cumulatively, name the culprit(s)");
  b->add_option("BASELINE", o->baseline, "baseline config")->required();
  b->add_option("VARIANT", o->variant, "variant config")->required();
  b->add_option("--out", o->out, "output folder");
  b->add_option("--steps", o->steps, "override run.steps")->check(positive_integer());
  b->add_option("--repeats", o->repeats, "timing repeats per arm in each trial")
      ->check(positive_integer());
  b->add_option("--policy", o->policy,
                "a TOML file whose [gate] section every trial applies (default: the baseline's)");
  b->callback([&action, o] {
    action = [o] {
      check_out_dir(o->out);
      compare::BisectRequest req;
      req.baseline = o->baseline;
      req.variant = o->variant;
      req.steps = o->steps;
      req.repeats = o->repeats;
      req.policy_file = o->policy;
      req.out_dir = o->out.empty()
                        ? util::timestamped_run_dir(
                              "bisect-" + std::filesystem::path(o->variant).stem().string())
                              .string()
                        : o->out;
      req.log = progress_line;
      req.on_trial = [](const compare::CompareResult& r, const std::string& dir) {
        reports::write_reports(r, dir);
      };
      auto result = compare::run_bisect(req);
      std::cout << reports::BisectConsoleReporter().render(result);
      return result.exit_code;
    };
  });
}

void add_demo_command(CLI::App& app, Action& action) {
  auto* demo =
      app.add_subcommand("demo", "The default demonstration: baseline vs bf16 on the tiny preset");
  demo->callback([&action] {
    action = [] {
      compare::CompareRequest req;
      req.baseline = {"baseline", std::string(LOCKSTEP_SOURCE_DIR) + "/configs/baseline.toml", {}};
      req.variant = {
          "variant", std::string(LOCKSTEP_SOURCE_DIR) + "/configs/variants/bf16.toml", {}};
      req.out_dir = util::timestamped_run_dir("demo-bf16").string();
      req.log = progress_line;
      return finish_compare(compare::run_comparison(req), req.out_dir, "", /*record=*/true);
    };
  });
}

}  // namespace lockstep::cli
