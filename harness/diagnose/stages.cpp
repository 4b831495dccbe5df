#include "harness/diagnose/stages.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "harness/runs/run_folder.h"

namespace lockstep::diagnose {
using nlohmann::json;

namespace {

double unit_ms(const UnitCost& u) {
  return u.forward_ms + u.backward_ms;
}

}  // namespace

LayerCosts layer_costs_from_json(const json& j, const std::string& where) {
  auto bad = [&](const std::string& why) { return std::runtime_error(where + ": " + why); };
  if (!j.is_object() || !j.contains("units") || !j["units"].is_array())
    throw bad("expected {\"steps\": N, \"units\": [...]}");
  LayerCosts c;
  if (j.contains("steps") && j["steps"].is_number()) c.steps = j["steps"].get<int64_t>();
  size_t i = 0;
  for (const auto& u : j["units"]) {
    if (!u.is_object() || !u.contains("name") || !u["name"].is_string())
      throw bad("unit " + std::to_string(i) + " has no name");
    UnitCost uc;
    uc.name = u["name"].get<std::string>();
    for (auto [key, dst] : {std::pair<const char*, double*>{"forward_ms", &uc.forward_ms},
                            {"backward_ms", &uc.backward_ms}}) {
      if (!u.contains(key) || !u[key].is_number())
        throw bad("unit \"" + uc.name + "\": " + key + " must be a number");
      *dst = u[key].get<double>();
      if (!std::isfinite(*dst) || *dst < 0)
        throw bad("unit \"" + uc.name + "\": " + key + " must be finite and >= 0");
    }
    c.units.push_back(std::move(uc));
    ++i;
  }
  if (c.units.size() < 3)
    throw bad("needs embedding, at least one block and head+loss (" +
              std::to_string(c.units.size()) + " units)");
  if (c.units.front().name != "embedding")
    throw bad("the first unit must be \"embedding\", not \"" + c.units.front().name + "\"");
  if (c.units.back().name != "head+loss")
    throw bad("the last unit must be \"head+loss\", not \"" + c.units.back().name + "\"");
  return c;
}

LayerCosts read_layer_costs(const std::filesystem::path& path) {
  return layer_costs_from_json(runs::read_layer_costs(path), path.string());
}

std::string Stage::units() const {
  std::string s = has_embedding ? "embedding + " : "";
  s += first_block == last_block
           ? "block " + std::to_string(first_block)
           : "blocks " + std::to_string(first_block) + "-" + std::to_string(last_block);
  if (has_head) s += " + head+loss";
  return s;
}

static void check_args(size_t blocks, int64_t stages) {
  if (stages < 1) throw std::invalid_argument("--stages must be at least 1");
  if (static_cast<size_t>(stages) > blocks)
    throw std::invalid_argument("cannot split " + std::to_string(blocks) + " blocks into " +
                                std::to_string(stages) +
                                " stages (each stage needs at least one block)");
}

Split split_from_sizes(const LayerCosts& c, const std::vector<size_t>& sizes, int64_t m) {
  if (m < 1) throw std::invalid_argument("--microbatches must be at least 1");
  check_args(c.blocks(), static_cast<int64_t>(sizes.size()));
  size_t total = 0;
  for (size_t n : sizes) {
    if (n == 0) throw std::invalid_argument("a stage without blocks");
    total += n;
  }
  if (total != c.blocks()) throw std::invalid_argument("stage sizes do not cover the blocks");
  Split s;
  size_t b = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Stage st;
    st.first_block = b;
    st.last_block = b + sizes[i] - 1;
    st.has_embedding = i == 0;
    st.has_head = i + 1 == sizes.size();
    auto add = [&](const UnitCost& u) {
      st.forward_ms += u.forward_ms, st.backward_ms += u.backward_ms;
    };
    if (st.has_embedding) add(c.units.front());
    for (size_t k = st.first_block; k <= st.last_block; ++k) add(c.units[k + 1]);
    if (st.has_head) add(c.units.back());
    b += sizes[i];
    s.stages.push_back(st);
  }
  const double P = static_cast<double>(sizes.size()), M = static_cast<double>(m);
  for (const auto& st : s.stages) s.max_ms = std::max(s.max_ms, st.ms()), s.sum_ms += st.ms();
  s.mean_ms = s.sum_ms / P;
  s.imbalance_pct = s.mean_ms > 0 ? (s.max_ms / s.mean_ms - 1.0) * 100.0 : 0.0;
  s.step_ms = (M + P - 1) * s.max_ms / M;
  s.bubble_ms = (P - 1) * s.max_ms / M;
  s.bubble_share = (P - 1) / (M + P - 1);
  s.efficiency = s.step_ms > 0 ? (s.sum_ms / P) / s.step_ms : 1.0;
  return s;
}

std::vector<size_t> naive_sizes(size_t blocks, int64_t stages) {
  check_args(blocks, stages);
  const size_t P = static_cast<size_t>(stages);
  std::vector<size_t> sizes(P, blocks / P);
  for (size_t i = 0; i < blocks % P; ++i) ++sizes[i];
  return sizes;
}

std::vector<size_t> optimal_sizes(const LayerCosts& c, int64_t stages) {
  const size_t B = c.blocks();
  check_args(B, stages);
  const size_t P = static_cast<size_t>(stages);
  std::vector<double> pre(B + 1, 0);  // prefix sums of block costs
  for (size_t i = 0; i < B; ++i) pre[i + 1] = pre[i] + unit_ms(c.units[i + 1]);
  const double emb = unit_ms(c.units.front()), head = unit_ms(c.units.back());
  // cost of a stage of blocks [a, b), being stage p of P
  auto cost = [&](size_t a, size_t b, size_t p) {
    return pre[b] - pre[a] + (p == 0 ? emb : 0) + (p + 1 == P ? head : 0);
  };
  const double inf = std::numeric_limits<double>::infinity();
  // best[p][b]: smallest max over stages 0..p covering blocks [0, b); cut[p][b]: start of stage p
  std::vector<std::vector<double>> best(P, std::vector<double>(B + 1, inf));
  std::vector<std::vector<size_t>> cut(P, std::vector<size_t>(B + 1, 0));
  for (size_t b = 1; b <= B; ++b) best[0][b] = cost(0, b, 0);
  for (size_t p = 1; p < P; ++p)
    for (size_t b = p + 1; b <= B; ++b)
      for (size_t a = p; a < b; ++a) {
        const double v = std::max(best[p - 1][a], cost(a, b, p));
        if (v < best[p][b]) best[p][b] = v, cut[p][b] = a;
      }
  std::vector<size_t> sizes(P);
  size_t b = B;
  for (size_t p = P; p-- > 0;) {
    const size_t a = p == 0 ? 0 : cut[p][b];
    sizes[p] = b - a;
    b = a;
  }
  return sizes;
}

StagePlan plan_stages(const LayerCosts& c, int64_t stages, int64_t m) {
  if (m == 0) m = 4 * stages;
  StagePlan p;
  p.stages = stages;
  p.microbatches = m;
  p.optimal = split_from_sizes(c, optimal_sizes(c, stages), m);
  p.naive = split_from_sizes(c, naive_sizes(c.blocks(), stages), m);
  p.speedup = p.optimal.step_ms > 0 ? p.naive.step_ms / p.optimal.step_ms : 1.0;
  p.costs = c;
  return p;
}

}  // namespace lockstep::diagnose
