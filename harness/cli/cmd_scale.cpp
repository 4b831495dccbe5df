// `lockstep scale`: strong and weak scaling of one config over several rank counts, with an
// Amdahl fit (harness/scale/scaling.h) and reports (reports/scale/reporters.h).
#include <CLI/CLI.hpp>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>

#include "harness/cli/cli.h"
#include "harness/cli/out_dir.h"
#include "harness/cli/validators.h"
#include "harness/config/config.h"
#include "harness/util/exit_codes.h"
#include "harness/scale/scaling.h"
#include "harness/util/files.h"
#include "reports/scale/reporters.h"

namespace lockstep::cli {
namespace {

// "1,2,4" -> {1, 2, 4}; throws UsageError naming the bad item.
std::vector<int> parse_nprocs(const std::string& s) {
  std::vector<int> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = s.find(',', start);
    const std::string item =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < 1 || v > 4096)
      throw UsageError(
          "--nproc: '" + item +
          "' is not a rank count (give positive integers separated by commas, e.g. 1,2,4)");
    out.push_back(static_cast<int>(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

void add_scale_command(CLI::App& app, Action& action) {
  struct Opts {
    std::string config, nproc, mode = "both", out;
    int64_t repeats = 3, steps_timed = 30;
    std::vector<std::string> sets;
  };
  auto o = std::make_shared<Opts>();
  auto* sc = app.add_subcommand("scale",
                                "Strong and weak scaling over rank counts: tokens/s, speed-up, "
                                "efficiency, comm share, Amdahl fit");
  sc->add_option("CONFIG", o->config, "config file")->required();
  sc->add_option("--nproc", o->nproc, "rank counts, comma-separated (e.g. 1,2,4)")->required();
  sc->add_option("--mode", o->mode, "strong (fixed global batch), weak (batch_size x N) or both")
      ->check(CLI::IsMember({"strong", "weak", "both"}));
  sc->add_option("--repeats", o->repeats, "runs per point; the median tokens/s is kept (default 3)")
      ->check(positive_integer());
  sc->add_option("--steps-timed", o->steps_timed,
                 "timed steps per run, after warmup and the profile window (default 30)")
      ->check(positive_integer());
  sc->add_option("--set", o->sets, "override a config key for every point: section.key=value")
      ->allow_extra_args(false);  // one value per --set: `--set k=v CONFIG` keeps CONFIG
  sc->add_option("--out", o->out, "report folder (default runs/<time>-scale-<name>)");
  sc->callback([&action, o] {
    action = [o] {
      check_out_dir(o->out);
      scale::ScaleRequest req;
      req.config = o->config;
      req.sets = o->sets;
      req.nprocs = parse_nprocs(o->nproc);
      req.mode = *scale::parse_mode(o->mode);  // --mode's IsMember check admits only its words
      req.repeats = o->repeats;
      req.steps_timed = o->steps_timed;
      const auto cfg =
          config::Config::load(o->config, o->sets);  // a bad config: exit 2 before any run
      req.out_dir = o->out.empty()
                        ? util::timestamped_run_dir("scale-" + cfg.str("run.name")).string()
                        : o->out;
      req.log = [](const std::string& s) { std::cerr << "[scale] " << s << std::endl; };
      auto result = scale::run_scaling(req);
      auto files = reports::write_scale_reports(result, req.out_dir);
      std::cout << reports::ScaleConsoleReporter().render(result);
      for (const auto& f : files) std::cout << "  " << f.string() << "\n";
      return result.exit_code;
    };
  });
}

}  // namespace lockstep::cli
