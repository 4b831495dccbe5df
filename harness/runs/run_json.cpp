#include "harness/runs/run_json.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lockstep::runs {
using nlohmann::json;

json num(double x) {
  return std::isfinite(x) ? json(x) : json(nullptr);
}
double num_or_nan(const json& j) {
  return j.is_number() ? j.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

json to_json(const StepRecord& r) {
  json j{{"step", r.step},  {"loss", num(r.loss)}, {"grad_norm", num(r.grad_norm)},
         {"lr", r.lr},      {"tokens", r.tokens},  {"step_ms", r.step_ms},
         {"timed", r.timed}};
  for (const auto& p : phase_names()) {
    auto it = r.phase_ms.find(p);
    j[p + "_ms"] = it == r.phase_ms.end() ? 0.0 : it->second;
  }
  j["loss_scale"] = r.loss_scale;
  j["overflow"] = r.overflow;
  j["skipped"] = r.skipped;
  j["skipped_outlier"] = r.skipped_outlier;
  j["nonfinite_grads"] = r.nonfinite_grads;
  json u = json::array();
  for (double g : r.unit_grad_norms) u.push_back(num(g));
  j["unit_grad_norms"] = u;
  j["batch_entropy"] = r.batch_entropy;
  j["batch_repeat_share"] = r.batch_repeat_share;
  j["batch_hash"] = r.batch_hash;
  j["rank"] = r.rank;
  j["local_loss"] = num(r.local_loss);
  j["comm_bytes"] = r.comm_bytes;
  j["comm_stream_ms"] = r.comm_stream_ms;
  j["turn_wait_ms"] = r.turn_wait_ms;
  return j;
}

StepRecord step_from_json(const json& j) {
  StepRecord r;
  r.step = j.at("step").get<int64_t>();
  r.loss = num_or_nan(j.at("loss"));
  r.grad_norm = num_or_nan(j.value("grad_norm", json()));
  r.lr = j.value("lr", 0.0);
  r.tokens = j.value("tokens", int64_t{0});
  r.step_ms = j.value("step_ms", 0.0);
  r.turn_wait_ms = j.value("turn_wait_ms", 0.0);
  r.timed = j.value("timed", true);
  for (const auto& p : phase_names()) r.phase_ms[p] = j.value(p + "_ms", 0.0);
  r.loss_scale = j.value("loss_scale", 1.0);
  r.overflow = j.value("overflow", false);
  r.skipped = j.value("skipped", false);
  r.skipped_outlier = j.value("skipped_outlier", false);
  r.nonfinite_grads = j.value("nonfinite_grads", int64_t{0});
  if (j.contains("unit_grad_norms"))
    for (const auto& g : j["unit_grad_norms"]) r.unit_grad_norms.push_back(num_or_nan(g));
  r.batch_entropy = j.value("batch_entropy", 0.0);
  r.batch_repeat_share = j.value("batch_repeat_share", 0.0);
  r.batch_hash = j.value("batch_hash", uint64_t{0});
  r.rank = j.value("rank", int64_t{0});
  r.local_loss = num_or_nan(j.value("local_loss", json()));
  r.comm_bytes = j.value("comm_bytes", uint64_t{0});
  r.comm_stream_ms = j.value("comm_stream_ms", 0.0);
  return r;
}

json plugins_json(const std::vector<PluginRef>& plugins) {
  json a = json::array();
  for (const auto& p : plugins) a.push_back({{"file", p.file}, {"sha256", p.sha256}});
  return a;
}

json to_json(const RunSummary& s) {
  json j{{"name", s.name},
         {"config_hash", s.config_hash},
         {"status", to_string(s.status)},
         {"steps", s.steps},
         {"timed_steps", s.timed_steps},
         {"final_loss", num(s.final_loss)},
         {"tokens_per_sec", num(s.tokens_per_sec)},
         {"step_ms",
          {{"p50", s.step_ms.p50},
           {"p95", s.step_ms.p95},
           {"p99", s.step_ms.p99},
           {"mean", s.step_ms.mean}}},
         {"flops_per_token", s.flops_per_token},
         {"mfu_formula", s.mfu_formula},
         {"peak_memory_bytes", s.peak_memory_bytes},
         {"peak_rss_bytes", s.peak_rss_bytes},
         {"param_bytes_per_rank", s.memory.param_bytes_per_rank},
         {"grad_bytes_per_rank", s.memory.grad_bytes_per_rank},
         {"optimizer_state_bytes_per_rank", s.memory.optimizer_state_bytes_per_rank},
         {"comm_bytes_per_step", s.comm_bytes_per_step},
         {"overflow_skips", s.overflow_skips},
         {"phase_share", s.phase_share},
         {"phase_ms_mean", s.phase_ms_mean},
         {"bound", s.bound},
         {"environment", s.env}};
  json ops = json::array();
  for (const auto& o : s.top_ops)
    ops.push_back(
        {{"name", o.name}, {"calls", o.calls}, {"self_ms", o.self_ms}, {"total_ms", o.total_ms}});
  j["top_ops"] = ops;
  json kernels = json::array();
  for (const auto& o : s.top_kernels)
    kernels.push_back(
        {{"name", o.name}, {"calls", o.calls}, {"self_ms", o.self_ms}, {"total_ms", o.total_ms}});
  j["top_kernels"] = kernels;
  j["profiled_steps"] = s.profiled_steps;
  json mem = json::array();
  auto opt = [](const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); };
  for (const auto& m : s.memory_per_rank)
    mem.push_back({{"rank", m.rank},
                   {"peak_allocated_bytes", m.peak_allocated_bytes},
                   {"peak_reserved_bytes", opt(m.peak_reserved_bytes)},
                   {"fragmentation_bytes", opt(m.fragmentation_bytes)},
                   {"alloc_retries", m.alloc_retries},
                   {"ooms", m.ooms}});
  j["memory_per_rank"] = mem;
  j["plugins"] = plugins_json(s.plugins);
  j["mfu"] = s.mfu ? num(*s.mfu) : json("unknown");
  j["peak_flops"] = s.peak_flops ? json(*s.peak_flops) : json("unknown");
  j["peak_flops_source"] = s.peak_flops_source;
  j["loss_floor"] = s.loss_floor ? json(*s.loss_floor) : json(nullptr);
  if (!s.ok()) {
    j["failure"] = s.failure;
    j["failed_step"] = s.failed_step;
  }
  return j;
}

RunSummary summary_from_json(const json& j) {
  RunSummary s;
  s.name = j.value("name", "");
  s.config_hash = j.value("config_hash", "");
  const std::string status = j.value("status", "ok");
  const auto parsed = parse_run_status(status);
  if (!parsed) throw std::runtime_error("summary.json: unknown status \"" + status + "\"");
  s.status = *parsed;
  s.failure = j.value("failure", "");
  s.failed_step = j.value("failed_step", int64_t{0});
  s.steps = j.value("steps", int64_t{0});
  s.timed_steps = j.value("timed_steps", int64_t{0});
  s.final_loss = num_or_nan(j.value("final_loss", json()));
  s.tokens_per_sec = num_or_nan(j.value("tokens_per_sec", json()));
  if (j.contains("step_ms")) {
    const auto& p = j["step_ms"];
    s.step_ms =
        Percentiles{num_or_nan(p.value("p50", json())), num_or_nan(p.value("p95", json())),
                    num_or_nan(p.value("p99", json())), num_or_nan(p.value("mean", json()))};
  }
  s.flops_per_token = j.value("flops_per_token", 0.0);
  s.mfu_formula = j.value("mfu_formula", "");
  if (j.contains("mfu") && j["mfu"].is_number()) s.mfu = j["mfu"].get<double>();
  if (j.contains("peak_flops") && j["peak_flops"].is_number())
    s.peak_flops = j["peak_flops"].get<double>();
  s.peak_flops_source = j.value("peak_flops_source", "");
  if (j.contains("loss_floor") && j["loss_floor"].is_number())
    s.loss_floor = j["loss_floor"].get<double>();
  s.peak_memory_bytes = j.value("peak_memory_bytes", int64_t{0});
  s.peak_rss_bytes = j.value("peak_rss_bytes", int64_t{0});
  s.memory.param_bytes_per_rank = j.value("param_bytes_per_rank", int64_t{0});
  s.memory.grad_bytes_per_rank = j.value("grad_bytes_per_rank", int64_t{0});
  s.memory.optimizer_state_bytes_per_rank = j.value("optimizer_state_bytes_per_rank", int64_t{0});
  s.comm_bytes_per_step = j.value("comm_bytes_per_step", 0.0);
  s.overflow_skips = j.value("overflow_skips", int64_t{0});
  if (j.contains("phase_share"))
    s.phase_share = j["phase_share"].get<std::map<std::string, double>>();
  if (j.contains("phase_ms_mean"))
    s.phase_ms_mean = j["phase_ms_mean"].get<std::map<std::string, double>>();
  s.bound = j.value("bound", "");
  if (j.contains("environment")) s.env = j["environment"].get<std::map<std::string, std::string>>();
  if (j.contains("top_ops"))
    for (const auto& o : j["top_ops"])
      s.top_ops.push_back(OpStat{o.value("name", ""), o.value("calls", 0.0),
                                 o.value("self_ms", 0.0), o.value("total_ms", 0.0)});
  if (j.contains("top_kernels"))
    for (const auto& o : j["top_kernels"])
      s.top_kernels.push_back(OpStat{o.value("name", ""), o.value("calls", 0.0),
                                     o.value("self_ms", 0.0), o.value("total_ms", 0.0)});
  s.profiled_steps = j.value("profiled_steps", int64_t{0});
  if (j.contains("memory_per_rank"))
    for (const auto& m : j["memory_per_rank"]) {
      RankMemory r;
      r.rank = m.value("rank", int64_t{0});
      r.peak_allocated_bytes = m.value("peak_allocated_bytes", int64_t{0});
      if (m.contains("peak_reserved_bytes") && m["peak_reserved_bytes"].is_number())
        r.peak_reserved_bytes = m["peak_reserved_bytes"].get<int64_t>();
      if (m.contains("fragmentation_bytes") && m["fragmentation_bytes"].is_number())
        r.fragmentation_bytes = m["fragmentation_bytes"].get<int64_t>();
      r.alloc_retries = m.value("alloc_retries", int64_t{0});
      r.ooms = m.value("ooms", int64_t{0});
      s.memory_per_rank.push_back(r);
    }
  if (j.contains("plugins") && j["plugins"].is_array())
    for (const auto& p : j["plugins"])
      s.plugins.push_back(PluginRef{p.value("file", ""), p.value("sha256", "")});
  return s;
}

json layer_costs_json(int64_t steps, const std::vector<UnitCost>& units) {
  json a = json::array();
  for (const auto& u : units)
    a.push_back({{"name", u.name}, {"forward_ms", u.forward_ms}, {"backward_ms", u.backward_ms}});
  return json{{"steps", steps}, {"units", a}};
}

namespace {

// Per-phase counts as {phase: count per step}, the phases with none left out.
json per_phase(const std::array<int64_t, kPhaseCount>& counts, double steps) {
  json j = json::object();
  for (int p = 0; p < kPhaseCount; ++p)
    if (counts[p] != 0) j[phase_name(static_cast<Phase>(p))] = counts[p] / steps;
  return j;
}

}  // namespace

json host_work_json(const HostWork& w) {
  const double n = static_cast<double>(std::max<int64_t>(w.steps, 1));
  json phases = json::object();
  for (int p = 0; p < kPhaseCount; ++p) {
    if (w.ops_in[p] == 0 && w.allocs_in[p] == 0 && w.syncs_in[p] == 0) continue;
    phases[phase_name(static_cast<Phase>(p))] = {{"ops", w.ops_in[p] / n},
                                                 {"allocations", w.allocs_in[p] / n},
                                                 {"syncs", w.syncs_in[p] / n},
                                                 {"weight_casts", w.weight_casts_in[p] / n}};
  }
  json ops = json::array();
  for (const auto& [name, counts] : w.ops) {
    json callers = json::object();
    if (const auto it = w.roots.find(name); it != w.roots.end())
      for (const auto& [root, calls] : it->second) callers[root] = calls / n;
    ops.push_back({{"name", name},
                   {"calls", w.calls(name) / n},
                   {"phases", per_phase(counts, n)},
                   {"callers", callers}});
  }
  std::stable_sort(ops.begin(), ops.end(), [](const json& a, const json& b) {
    return a["calls"].get<double>() > b["calls"].get<double>();
  });
  return json{{"steps", w.steps},
              {"per_step",
               {{"ops", w.total_ops() / n},
                {"allocations", w.total_allocs() / n},
                {"syncs", w.total_syncs() / n},
                {"syncs_inside_step", w.syncs_inside_step() / n},
                {"weight_casts", w.total_weight_casts() / n}}},
              {"phases", phases},
              {"ops", ops}};
}

}  // namespace lockstep::runs
