// A run's summary from its step records: throughput, MFU, latency percentiles and where the time
// went. Warmup steps never count.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/vocab/outcome.h"
#include "harness/vocab/records.h"

namespace lockstep {

struct SummaryInputs {
  std::string name;
  std::string config_hash;
  double flops_per_token = 0;        // model FLOPs per token (formula in mfu_formula)
  std::optional<double> peak_flops;  // all ranks together; unset = unknown
  std::string peak_flops_source;
};

inline const char* kMfuFormula =
    "PaLM appendix B: 6*N + 12*L*H*Q*T per token (N = parameters without the position embedding, "
    "tied embedding once)";

// status/failure/memory/env come from the trainer; the statistics are computed here.
RunSummary summarize(const std::vector<StepRecord>& records, const SummaryInputs& in,
                     RunSummary base);

// A run's summary from what its trainer knows at its end, Lockstep's own or an external one (whose
// outcome is a TrainOutcome too): status, failure, memory, profile and environment from `o`, the
// statistics from `records` (the outcome's own, or a resumed run's whole curve), and the plugin
// files the run loaded. The one place outcome fields become summary fields.
RunSummary summarize_outcome(const train::TrainOutcome& o, const std::vector<StepRecord>& records,
                             const SummaryInputs& in, std::vector<PluginRef> plugins = {});

// "input-bound" when data is the largest share, "comm-bound" when communication is, else
// "compute-bound" (forward + backward + optimizer).
std::string classify_bound(const std::map<std::string, double>& phase_share);

}  // namespace lockstep
