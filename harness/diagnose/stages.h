// Pipeline stage balance (`lockstep stages RUN_DIR --stages P`): from the measured cost of each
// model unit (RUN_DIR/layer_costs.json: measured by the trainer's profiler, written by the run
// folder, harness/runs/run_folder.h), the optimal contiguous split of the model into P pipeline
// stages against the naive equal split of blocks. Rendered by reports/diagnose/reporters.h.
//
// layer_costs.json: {"steps": N, "units": [{"name": "embedding", "forward_ms": x, "backward_ms":
// y},
//                    {"name": "block 0", ...}, ..., {"name": "head+loss", ...}]}  (mean ms per
//                    step)
//
// A stage is a contiguous, non-empty run of blocks; the embedding always goes with the first stage
// and head+loss with the last (so 1 <= P <= number of blocks). A stage's time is the sum of its
// units' forward + backward ms.
//   optimal:   minimises the slowest stage, exactly (dynamic programming over the block prefix,
//              O(P * B^2)); ties keep the earliest cut points.
//   naive:     blocks divided as evenly as possible (the first B mod P stages get one extra).
//   imbalance: (max / mean - 1) * 100 over the stages' times.
//   bubble:    GPipe with m micro-batches (default 4P): every micro-batch passes every stage, the
//              slowest stage sets the pace, so one step takes (m + P - 1) * t_max / m, where t_max
//              is the slowest stage's time for the whole batch. The ideal (balanced, no bubble) is
//              sum / P. bubble share = (P - 1) / (m + P - 1) of the step; efficiency = ideal /
//              step.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/vocab/records.h"

namespace lockstep::diagnose {

struct LayerCosts {
  int64_t steps = 0;
  std::vector<UnitCost> units;  // embedding, block 0..B-1, head+loss
  size_t blocks() const { return units.size() >= 2 ? units.size() - 2 : 0; }
};

// Parses layer_costs.json; throws std::runtime_error naming the file on a malformed one (fewer
// than 3 units, first not "embedding", last not "head+loss", negative or non-numeric times).
LayerCosts read_layer_costs(const std::filesystem::path& path);
LayerCosts layer_costs_from_json(const nlohmann::json& j,
                                 const std::string& where = "layer_costs.json");

struct Stage {
  size_t first_block = 0, last_block = 0;  // inclusive block indices
  bool has_embedding = false, has_head = false;
  double forward_ms = 0, backward_ms = 0;
  double ms() const { return forward_ms + backward_ms; }
  std::string units() const;  // "embedding + blocks 0-2"
};

struct Split {
  std::vector<Stage> stages;
  double max_ms = 0, mean_ms = 0, sum_ms = 0;
  double imbalance_pct = 0;  // (max / mean - 1) * 100
  double step_ms = 0;        // GPipe estimate: (m + P - 1) * max / m
  double bubble_ms = 0;      // (P - 1) * max / m
  double bubble_share = 0;   // (P - 1) / (m + P - 1)
  double efficiency = 0;     // (sum / P) / step_ms
};

struct StagePlan {
  int64_t stages = 0, microbatches = 0;
  Split optimal, naive;
  double speedup = 0;  // naive.step_ms / optimal.step_ms
  LayerCosts costs;    // what the split was planned from
};

// Throws std::invalid_argument when P < 1, P > blocks, or m < 1.
Split split_from_sizes(const LayerCosts& c, const std::vector<size_t>& blocks_per_stage,
                       int64_t microbatches);
std::vector<size_t> optimal_sizes(const LayerCosts& c, int64_t stages);
std::vector<size_t> naive_sizes(size_t blocks, int64_t stages);
StagePlan plan_stages(const LayerCosts& c, int64_t stages,
                      int64_t microbatches = 0);  // 0 = 4 * stages

}  // namespace lockstep::diagnose
