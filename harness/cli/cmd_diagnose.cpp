// `lockstep diagnose` (loss-spike diagnosis), `lockstep stages` (pipeline stage balance) and
// `lockstep trace-check` (trace-event format validation).
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>

#include "harness/cli/cli.h"
#include "harness/cli/out_dir.h"
#include "harness/cli/validators.h"
#include "harness/diagnose/report.h"
#include "harness/diagnose/stages.h"
#include "harness/diagnose/trace_check.h"
#include "harness/exit_codes.h"
#include "reports/diagnose/reporters.h"

namespace lockstep::cli {
namespace fs = std::filesystem;

void add_diagnose_commands(CLI::App& app, Action& action) {
  {
    struct Opts {
      std::string run, out;
      bool json = false;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = app.add_subcommand(
        "diagnose",
        "Find loss spikes, non-finite losses and slow steps in a run, and rank their causes");
    cmd->add_option("RUN_DIR", o->run, "a run folder (metrics.jsonl, metrics.rank<r>.jsonl)")
        ->required();
    cmd->add_option("--out", o->out, "where diagnosis.json/.md/.html go (default RUN_DIR)");
    cmd->add_flag("--json", o->json, "print the JSON instead of the text");
    cmd->callback([&action, o] {
      action = [o] {
        if (!fs::is_directory(o->run)) throw UsageError(o->run + ": not a run folder");
        if (!fs::exists(fs::path(o->run) / "metrics.jsonl"))
          throw UsageError(o->run + ": no metrics.jsonl (is it a run folder?)");
        check_out_dir(o->out);
        // A run folder with a corrupt file, or an --out that cannot be written, is bad input
        // (exit 2), not a failed run.
        diagnose::DiagnoseReport r;
        std::vector<fs::path> files;
        try {
          r = diagnose::diagnose_run(o->run);
          files = reports::write_diagnosis_reports(
              r, o->out.empty() ? fs::path(o->run) : fs::path(o->out));
        } catch (const std::runtime_error& e) {
          throw UsageError(e.what());
        }
        if (o->json) {
          std::cout << reports::DiagnosisJsonReporter().render(r);
        } else {
          std::cout << reports::DiagnosisConsoleReporter().render(r);
          for (const auto& f : files) std::cout << "  " << f.string() << "\n";
        }
        return kExitPass;
      };
    });
  }
  {
    struct Opts {
      std::string run;
      int64_t stages = 0, microbatches = 0;
      bool json = false;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = app.add_subcommand(
        "stages",
        "Split the model into pipeline stages from measured per-layer cost: optimal vs naive");
    cmd->add_option("RUN_DIR", o->run, "a run folder with layer_costs.json (or the file itself)")
        ->required();
    cmd->add_option("--stages", o->stages, "pipeline stages P")
        ->required()
        ->check(positive_integer());
    cmd->add_option("--microbatches", o->microbatches,
                    "micro-batches per step for the bubble estimate (default 4*P)")
        ->check(positive_integer());
    cmd->add_flag("--json", o->json, "print JSON");
    cmd->callback([&action, o] {
      action = [o] {
        fs::path p =
            fs::is_directory(o->run) ? fs::path(o->run) / "layer_costs.json" : fs::path(o->run);
        if (!fs::exists(p))
          throw UsageError(p.string() +
                           ": no such file (the run records per-layer costs when profiling is on)");
        diagnose::LayerCosts costs;
        try {
          costs = diagnose::read_layer_costs(p);
        } catch (const std::runtime_error& e) {
          throw UsageError(e.what());
        }
        diagnose::StagePlan plan;
        try {
          plan = diagnose::plan_stages(costs, o->stages, o->microbatches);
        } catch (const std::invalid_argument& e) {
          throw UsageError(e.what());
        }
        if (o->json)
          std::cout << reports::StagesJsonReporter().render(plan);
        else
          std::cout << reports::StagesConsoleReporter().render(plan);
        return kExitPass;
      };
    });
  }
  {
    auto files = std::make_shared<std::vector<std::string>>();
    auto* cmd = app.add_subcommand(
        "trace-check", "Validate Chrome trace-event files (one per rank): exit 0 valid, 1 invalid");
    cmd->add_option("FILE", *files, "trace files, e.g. RUN_DIR/trace.rank*.json")->required();
    cmd->callback([&action, files] {
      action = [files] {
        std::vector<fs::path> paths(files->begin(), files->end());
        auto errors = diagnose::check_trace_files(paths);
        for (const auto& e : errors) std::cout << "invalid: " << e << "\n";
        if (errors.empty())
          std::cout << "valid: " << paths.size()
                    << (paths.size() == 1 ? " trace file" : " trace files") << "\n";
        return errors.empty() ? kExitPass : kExitGateFailed;
      };
    });
  }
}

}  // namespace lockstep::cli
