// `lockstep diagnose` (loss-spike diagnosis; on a serving run, where the tail came from), `lockstep stages` (pipeline stage balance) and
// `lockstep trace-check` (trace-event format validation).
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "harness/cli/cli.h"
#include "harness/cli/out_dir.h"
#include "harness/cli/validators.h"
#include "harness/diagnose/report.h"
#include "harness/diagnose/stages.h"
#include "harness/diagnose/trace_check.h"
#include "harness/serve/serve_diagnosis.h"
#include "harness/util/exit_codes.h"
#include "reports/diagnose/reporters.h"
#include "reports/serve_text.h"

namespace lockstep::cli {
namespace fs = std::filesystem;

namespace {

nlohmann::json read_json_file(const fs::path& p) {
  std::ifstream in(p);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(p.string() + ": not JSON (" + e.what() + ")");
  }
}

// A serving comparison's --out (report.json of kind "serve") or a `serve --json` file: the
// report, read once; nullopt for anything else (a training run folder).
std::optional<nlohmann::json> serving_report(const std::string& run) {
  const fs::path p(run);
  if (fs::is_regular_file(p))
    return p.extension() == ".json" ? std::optional(read_json_file(p)) : std::nullopt;
  const fs::path rep = p / "report.json";
  if (!fs::is_regular_file(rep) || fs::exists(p / "metrics.jsonl")) return std::nullopt;
  auto j = read_json_file(rep);
  if (!j.is_object() || j.value("kind", "") != "serve") return std::nullopt;
  return j;
}

int diagnose_serving_run(const std::string& run, const nlohmann::json& report,
                         const std::string& out, bool json) {
  const bool file = fs::is_regular_file(run);
  std::vector<serve::ServeFinding> findings;
  try {
    findings = serve::diagnose_serving(report);
  } catch (const std::runtime_error& e) {
    throw UsageError((file ? run : (fs::path(run) / "report.json").string()) + ": " + e.what());
  }
  // Files next to a comparison's report (or in --out); a `serve --json` file only with --out.
  const std::string dir = !out.empty() ? out : file ? "" : run;
  if (!dir.empty()) {
    check_out_dir(out);
    fs::create_directories(dir);
    std::ofstream(fs::path(dir) / "diagnosis.json") << serve::to_json(findings).dump(2) << "\n";
    std::ofstream(fs::path(dir) / "diagnosis.md") << reports::serve_diagnosis_text(findings, true);
  }
  std::cout << (json ? serve::to_json(findings).dump(2) + "\n"
                     : reports::serve_diagnosis_text(findings, false));
  return kExitPass;
}

}  // namespace

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
    cmd->add_option("RUN_DIR", o->run,
                    "a run folder (metrics.jsonl, metrics.rank<r>.jsonl), or a serving run: a "
                    "serving comparison's --out folder or a `serve --json` file")
        ->required();
    cmd->add_option("--out", o->out, "where diagnosis.json/.md/.html go (default RUN_DIR)");
    cmd->add_flag("--json", o->json, "print the JSON instead of the text");
    cmd->callback([&action, o] {
      action = [o] {
        if (const auto rep = serving_report(o->run))
          return diagnose_serving_run(o->run, *rep, o->out, o->json);
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
