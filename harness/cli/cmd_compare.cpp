// `lockstep compare`, `lockstep bisect` and `lockstep demo`.
#include <CLI/CLI.hpp>
#include <ctime>
#include <iostream>
#include <memory>

#include "harness/cli/cli.h"
#include "harness/compare/bisect.h"
#include "harness/compare/comparison.h"
#include "harness/exit_codes.h"
#include "reports/reporter.h"

namespace lockstep::cli {
namespace {

std::string default_compare_dir(const std::string& what) {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
  return "runs/" + std::string(buf) + "-" + what;
}

int report_and_exit(const compare::CompareResult& r, const std::string& out) {
  auto files = reports::write_reports(r, out);
  std::cout << reports::make_reporter("console")->render(r);
  for (const auto& f : files) std::cout << "  " << f.string() << "\n";
  return r.exit_code;
}

void progress_line(const std::string& s) { std::cerr << "[compare] " << s << std::endl; }

}  // namespace

void add_compare_command(CLI::App& app, Action& action) {
  struct Opts {
    std::string baseline, variant, out, policy, golden;
    int64_t steps = 0, check_step = -1, repeats = 0;
    std::vector<std::string> bsets, vsets;
  };
  auto o = std::make_shared<Opts>();
  auto* cmp = app.add_subcommand("compare", "A/B-compare a variant against a baseline: same math? faster? P99 no worse?");
  cmp->add_option("BASELINE", o->baseline, "baseline config (omit with --golden)");
  cmp->add_option("VARIANT", o->variant, "variant config")->required();
  cmp->add_option("--out", o->out, "report folder (default runs/<time>-compare-<variant>)");
  cmp->add_option("--steps", o->steps, "override run.steps of both arms")->check(CLI::PositiveNumber);
  cmp->add_option("--check-step", o->check_step, "step whose loss must agree (default: the last)")->check(CLI::NonNegativeNumber);
  cmp->add_option("--repeats", o->repeats, "timing repeats per arm (default gate.repeats = 5)")->check(CLI::PositiveNumber);
  cmp->add_option("--policy", o->policy, "a TOML file whose [gate] section is the policy to apply");
  cmp->add_option("--golden", o->golden, "compare the variant's curve with these `step loss` lines (no timing verdict)");
  cmp->add_option("--set-baseline", o->bsets, "override a baseline key: section.key=value");
  cmp->add_option("--set-variant", o->vsets, "override a variant key: section.key=value");
  cmp->callback([&action, o] {
    action = [o] {
      compare::CompareRequest req;
      if (o->golden.empty()) {
        if (o->baseline.empty()) {
          std::cerr << "lockstep compare: BASELINE VARIANT, or --golden FILE VARIANT\n";
          return kExitUsage;
        }
        req.baseline = {"baseline", o->baseline, o->bsets};
      } else if (!o->baseline.empty()) {
        std::cerr << "lockstep compare: with --golden give only the VARIANT config\n";
        return kExitUsage;
      }
      req.variant = {"variant", o->variant, o->vsets};
      req.golden_file = o->golden;
      req.steps = o->steps;
      req.check_step = o->check_step;
      req.repeats = o->repeats;
      req.policy_file = o->policy;
      const std::string stem = std::filesystem::path(o->variant).stem().string();
      req.out_dir = o->out.empty() ? default_compare_dir("compare-" + stem) : o->out;
      req.log = progress_line;
      return report_and_exit(compare::run_comparison(req), req.out_dir);
    };
  });
}

void add_bisect_command(CLI::App& app, Action& action) {
  struct Opts {
    std::string baseline, variant, out;
    int64_t steps = 0, repeats = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* b = app.add_subcommand("bisect", "For a variant that changes several knobs: try each alone and cumulatively, name the culprit(s)");
  b->add_option("BASELINE", o->baseline, "baseline config")->required();
  b->add_option("VARIANT", o->variant, "variant config")->required();
  b->add_option("--out", o->out, "output folder");
  b->add_option("--steps", o->steps, "override run.steps")->check(CLI::PositiveNumber);
  b->add_option("--repeats", o->repeats, "timing repeats per arm in each trial")->check(CLI::PositiveNumber);
  b->callback([&action, o] {
    action = [o] {
      compare::BisectRequest req;
      req.baseline = o->baseline;
      req.variant = o->variant;
      req.steps = o->steps;
      req.repeats = o->repeats;
      req.out_dir = o->out.empty() ? default_compare_dir("bisect-" + std::filesystem::path(o->variant).stem().string()) : o->out;
      req.log = progress_line;
      auto result = compare::run_bisect(req);
      std::cout << compare::render_bisect(result);
      return result.exit_code;
    };
  });
}

void add_demo_command(CLI::App& app, Action& action) {
  auto* demo = app.add_subcommand("demo", "The default demonstration: baseline vs bf16 on the tiny preset");
  demo->callback([&action] {
    action = [] {
      compare::CompareRequest req;
      req.baseline = {"baseline", std::string(LOCKSTEP_SOURCE_DIR) + "/configs/baseline.toml", {}};
      req.variant = {"variant", std::string(LOCKSTEP_SOURCE_DIR) + "/configs/variants/bf16.toml", {}};
      req.out_dir = default_compare_dir("demo-bf16");
      req.log = progress_line;
      return report_and_exit(compare::run_comparison(req), req.out_dir);
    };
  });
}

}  // namespace lockstep::cli
