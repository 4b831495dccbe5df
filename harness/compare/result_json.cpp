#include "harness/compare/result_json.h"

#include <cmath>

#include "harness/runs/run_json.h"

namespace lockstep::compare {
using json = nlohmann::ordered_json;  // fields in contract order: verdict first

namespace {

// run_json's num() for ordered_json: the number, or null when non-finite.
json number(double x) {
  return std::isfinite(x) ? json(x) : json(nullptr);
}

json nums(const std::vector<double>& xs) {
  json a = json::array();
  for (double x : xs) a.push_back(number(x));
  return a;
}

json opt(const std::optional<double>& x) {
  return x ? number(*x) : json(nullptr);
}
// {"external": true, "protocol": 1, "supports": [], "lacks": ["turns", "noise", "probe"]}
json trainer_json(const TrainerProtocol& t) {
  json supports = json::array(), lacks = json::array();
  for (auto c : t.supports) supports.push_back(to_string(c));
  for (auto c : t.lacks()) lacks.push_back(to_string(c));
  return {{"external", t.external},
          {"protocol", t.version},
          {"supports", supports},
          {"lacks", lacks},
          {"compute", t.compute.empty() ? json(nullptr) : json(t.compute)},
          {"observed_compute",
           t.observed_compute.empty() ? json(nullptr) : json(t.observed_compute)}};
}

// report.json "conformance": null when no kernel was checked (docs/report-schema.md).
json conformance_json(const CompareResult& r) {
  if (!r.conformance && r.conformance_failure.empty()) return nullptr;
  json rows = json::array();
  if (r.conformance)
    for (const auto& x : r.conformance->rows)
      rows.push_back({{"slot", x.slot},           {"kernel", x.kernel},
                      {"origin", x.origin},       {"knob", x.knob},
                      {"case", x.case_name},      {"shape", x.shape},
                      {"direction", x.direction}, {"dtype", x.dtype},
                      {"error", number(x.error)}, {"builtin_error", number(x.builtin_error)},
                      {"builtin", x.builtin},     {"factor", number(x.factor)},
                      {"floor", number(x.floor)}, {"bound", number(x.bound)},
                      {"ratio", number(x.ratio())}, {"verdict", x.passed ? "pass" : "fail"}});
  return {{"passed", r.conformance && r.conformance->passed() && r.conformance_failure.empty()},
          {"failure", r.conformance_failure.empty() ? json(nullptr) : json(r.conformance_failure)},
          {"kernels", r.conformance ? json(r.conformance->kernels) : json::array()},
          {"device", r.conformance ? json(r.conformance->device) : json(nullptr)},
          {"seconds", r.conformance ? number(r.conformance->seconds) : json(nullptr)},
          {"rows", rows}};
}

json str_or_null(const std::string& s) {
  return s.empty() ? json(nullptr) : json(s);
}

json ms_map(const std::map<std::string, double>& m) {
  json o = json::object();
  for (const auto& [k, v] : m) o[k] = number(v);
  return o;
}

json ops_json(const std::vector<OpStat>& ops) {
  json a = json::array();
  for (const auto& op : ops)
    a.push_back({{"name", op.name},
                 {"calls", number(op.calls)},
                 {"self_ms", number(op.self_ms)},
                 {"total_ms", number(op.total_ms)}});
  return a;
}

json breakdown_json(const Breakdown& b) {
  json phases = json::array(), ops = json::array();
  for (const auto& p : b.phases)
    phases.push_back({{"phase", p.phase},
                      {"baseline_share", number(p.baseline_share)},
                      {"variant_share", number(p.variant_share)},
                      {"baseline_ms", number(p.baseline_ms)},
                      {"variant_ms", number(p.variant_ms)}});
  for (const auto& o : b.ops)
    ops.push_back({{"name", o.name},
                   {"baseline_ms", number(o.baseline_ms)},
                   {"variant_ms", number(o.variant_ms)},
                   {"baseline_calls", number(o.baseline_calls)},
                   {"variant_calls", number(o.variant_calls)}});
  return {{"phases", phases}, {"ops", ops}, {"findings", b.findings}};
}

json arm_json(const ArmResult& a) {
  json phases = json::object();
  for (const auto& [k, v] : a.phase_share) phases[k] = number(v);
  return {{"name", a.name},
          {"config", a.config_path},
          {"plugins", runs::plugins_json(a.plugins)},
          {"status", to_string(a.status)},
          {"failure", str_or_null(a.failure)},
          {"tokens_per_sec", number(a.tokens_per_sec)},
          {"tokens_per_sec_ci", {number(a.tokens_per_sec_ci_lo), number(a.tokens_per_sec_ci_hi)}},
          {"mfu", a.mfu ? number(*a.mfu) : json("unknown")},
          {"mfu_common", a.mfu_common ? number(*a.mfu_common) : json("unknown")},
          {"step_ms",
           {{"p50", number(a.step_ms.p50)},
            {"p95", number(a.step_ms.p95)},
            {"p99", number(a.step_ms.p99)},
            {"mean", number(a.step_ms.mean)},
            {"n", a.step_ms_n},
            {"tail", number(a.step_ms_tail)}}},
          {"peak_memory_bytes", a.peak_memory_bytes},
          {"param_bytes_per_rank", a.memory.param_bytes_per_rank},
          {"grad_bytes_per_rank", a.memory.grad_bytes_per_rank},
          {"optimizer_state_bytes_per_rank", a.memory.optimizer_state_bytes_per_rank},
          {"comm_bytes_per_step", number(a.comm_bytes_per_step)},
          {"zero_stage", a.zero_stage},
          {"world_size", a.world_size},
          {"phase_share", phases},
          {"phase_ms", ms_map(a.phase_ms)},
          {"bound", a.bound},
          {"top_ops", ops_json(a.top_ops)},
          {"tokens_per_sec_repeats", nums(a.tokens_per_sec_repeats)},
          {"loss_curve", nums(a.loss_curve)},
          {"alignment_run", json(runs::to_json(a.alignment_run))}};
}

json delta_json(const Delta& d) {
  if (!d.known)
    return {{"value", nullptr},
            {"ci", nullptr},
            {"p_value", nullptr},
            {"significant", false},
            {"wording", d.wording.empty() ? "unknown" : d.wording}};
  return {{"value", number(d.point)},
          {"ci", {number(d.ci_lo), number(d.ci_hi)}},
          {"p_value", number(d.p_value)},
          {"significant", d.significant},
          {"wording", d.wording}};
}

// report.json "alignment.envelope" (docs/report-schema.md).
json envelope_json(const Envelope& e) {
  return {{"runs", e.runs},
          {"noise_seeds", e.noise_seeds},
          {"factor", number(e.factor)},
          {"noise", number(e.noise)},
          {"noise_source", e.noise_source},
          {"noise_dtype", str_or_null(e.noise_dtype.dtype)},
          {"noise_dtype_arm", to_string(e.noise_dtype.arm)},
          {"noise_dtype_from", to_string(e.noise_dtype.from)},
          {"window", e.window},
          {"values", nums(e.values)},
          {"at_check", number(e.at_check)},
          {"bound_at_check", number(e.bound_at_check)},
          {"inside", e.inside}};
}

json alignment_json(const Alignment& a) {
  json band = nullptr;
  if (a.band)
    band = {{"seeds", a.band->seeds},
            {"losses", nums(a.band->losses)},
            {"half_width", number(a.band->half_width)},
            {"lo", number(a.band->lo)},
            {"hi", number(a.band->hi)},
            {"inside", a.band->inside}};
  const json envelope = a.envelope ? envelope_json(*a.envelope) : json(nullptr);
  json probe = nullptr;
  if (a.probe.run) {
    auto table = [](const std::vector<std::vector<double>>& rows) {
      json j = json::array();
      for (const auto& r : rows) j.push_back(nums(r));
      return j;
    };
    probe = {{"steps", a.probe.steps},
             {"tensors", a.probe.tensors},
             {"noise_runs", a.probe.noise_runs},
             {"noise", number(a.probe.noise)},
             {"noise_source", a.probe.noise_source},
             {"factor", number(a.probe.factor)},
             {"variant", table(a.probe.variant)},
             {"envelope", table(a.probe.envelope)},
             {"ratio", table(a.probe.ratio)},
             {"ratio_max", number(a.probe.ratio_max)},
             {"at_step", a.probe.at_step},
             {"at_tensor", a.probe.at_tensor},
             {"first_outside",
              a.probe.first_outside_tensor.empty()
                  ? json(nullptr)
                  : json{{"step", a.probe.first_outside_step},
                         {"tensor", a.probe.first_outside_tensor}}},
             {"passed", a.probe.passed}};
  } else if (!a.probe.note.empty()) {
    probe = {{"note", a.probe.note}};
  }
  const json curve = {{"statistic", "mean_abs_diff"},
                      {"from_step", a.curve.from_step},
                      {"to_step", a.curve.to_step},
                      {"value", number(a.curve.value)},
                      {"bound", a.curve.judged ? number(a.curve.bound) : json(nullptr)},
                      {"bound_rule", a.curve.judged ? json(a.curve.bound_rule) : json(nullptr)},
                      {"judged", a.curve.judged},
                      {"passed", a.curve.judged ? json(a.curve.passed) : json(nullptr)}};
  return {{"class", config::knob_class_name(a.klass)},
          {"rule", to_string(a.rule)},
          {"envelope", envelope},
          {"curve", curve},
          {"probe", probe},
          {"check_step", a.check_step},
          {"baseline_loss", number(a.baseline_loss)},
          {"variant_loss", number(a.variant_loss)},
          {"abs_diff", number(a.abs_diff)},
          {"tolerance", number(a.tolerance)},
          {"aligned", a.applicable ? json(a.aligned) : json(nullptr)},
          {"applicable", a.applicable},
          {"first_divergent_step",
           a.first_divergent_step == 0 ? json(nullptr) : json(a.first_divergent_step)},
          {"max_abs_diff", number(a.max_abs_diff)},
          {"baseline_rounded", a.baseline_rounded},
          {"variant_rounded", a.variant_rounded},
          {"equal_to_3dp", a.equal_to_3dp},
          {"seed_band", band},
          {"explanation", a.explanation}};
}

json policy_json(const gate::Policy& p) {
  return {{"tolerance", number(p.tolerance)},
          {"check_step", p.check_step},
          {"seeds", p.seeds},
          {"envelope_runs", p.envelope_runs},
          {"envelope_factor", number(p.envelope_factor)},
          {"envelope_noise", number(p.envelope_noise)},
          {"probe_factor", number(p.probe_factor)},
          {"curve_window_pct", number(p.curve_window_pct)},
          {"repeats", p.auto_repeats ? json("auto") : json(p.repeats)},
          {"max_repeats", p.max_repeats},
          {"max_minutes", number(p.max_minutes)},
          {"timing_steps", p.timing_steps},
          {"interleave", p.interleave},
          {"alpha", number(p.alpha)},
          {"check_level", number(p.check_level())},
          {"bootstrap", p.bootstrap},
          {"max_p99_regression_pct", number(p.max_p99_regression_pct)},
          {"max_slowdown_pct", number(p.max_slowdown_pct)},
          {"min_speedup_pct", opt(p.min_speedup_pct)},
          {"min_memory_saving_pct", opt(p.min_memory_saving_pct)},
          {"p99_min_samples", p.p99_min_samples},
          {"on_inconclusive", gate::to_string(p.on_inconclusive)}};
}

json power_json(const CompareResult& r) {
  if (!r.timed || !r.power.known) return nullptr;
  return {{"tokens_per_sec_mde_pct", number(r.power.tokens_per_sec_mde_pct)},
          {"p99_mde_pct", number(r.power.p99_mde_pct)},
          {"p50_mde_pct", number(r.power.p50_mde_pct)},
          {"power", number(r.power.power)},
          {"level", number(r.power.level)}};
}

json sequential_json(const Sequential& s, const gate::Policy& p) {
  if (!s.enabled) return nullptr;
  json looks = json::array();
  for (const auto& l : s.looks) {
    json verdicts = json::object();
    for (const auto& [kind, v] : l.verdicts) verdicts[to_string(kind)] = to_string(v);
    looks.push_back(
        {{"repeats", l.repeats}, {"minutes", number(l.minutes)}, {"verdicts", verdicts}});
  }
  return {{"method", kSequentialMethod},
          {"planned_looks", p.looks()},
          {"level_per_look", number(p.check_level())},
          {"looks", looks},
          {"stopped", s.stopped}};
}

json common_peak_json(const CompareResult& r) {
  if (!std::isfinite(r.common_peak.flops)) return nullptr;
  return {{"flops", number(r.common_peak.flops)},
          {"arm", r.common_peak.arm},
          {"source", r.common_peak.source}};
}

// Golden mode: the golden file's format, its environment and which rule it allowed (null in A/B).
json golden_json(const CompareResult& r) {
  if (!r.golden) return nullptr;
  const GoldenSource& g = *r.golden;
  return {{"format", g.format},
          {"environment", g.environment},
          {"differing", g.differing},
          {"envelope", g.envelope},
          {"exact_by_envelope", g.exact_by_envelope},
          {"judged_by", g.judged_by}};
}

}  // namespace

json to_json(const CompareResult& r) {
  json delta = {
      {"tokens_per_sec_pct", delta_json(r.delta.tokens_per_sec_pct)},
      {"mfu_pts", delta_json(r.delta.mfu_pts)},
      {"mfu_common_pts", delta_json(r.delta.mfu_common_pts)},
      {"p50_ms_pct", delta_json(r.delta.p50_ms_pct)},
      {"p99_ms_pct", delta_json(r.delta.p99_ms_pct)},
      {"memory_pct", opt(r.delta.memory_pct)},
      {"param_bytes_per_rank_pct", opt(r.delta.param_bytes_per_rank_pct)},
      {"grad_bytes_per_rank_pct", opt(r.delta.grad_bytes_per_rank_pct)},
      {"optimizer_state_bytes_per_rank_pct", opt(r.delta.optimizer_state_bytes_per_rank_pct)},
      {"comm_bytes_per_step_pct", opt(r.delta.comm_bytes_per_step_pct)}};
  json changes = json::array();
  for (const auto& c : r.changes)
    changes.push_back({{"key", c.key}, {"baseline", c.before}, {"variant", c.after}});
  json checks = json::array();
  for (const auto& c : r.checks)
    checks.push_back({{"name", c.name},
                      {"passed", c.passed},
                      {"verdict", to_string(c.verdict)},
                      {"detail", c.detail},
                      {"p_value", number(c.p_value)},
                      {"p_adjusted", number(c.p_adjusted)},
                      {"mde_pct", number(c.mde_pct)}});
  return {{"verdict", to_string(r.verdict)},
          {"exit_code", r.exit_code},
          {"mode", to_string(r.mode)},
          {"alignment", alignment_json(r.alignment)},
          {"loss_reference", r.loss_reference},
          {"baseline", arm_json(r.baseline)},
          {"variant", arm_json(r.variant)},
          {"delta", delta},
          {"tail_statistic", r.timed ? json(r.tail.label) : json(nullptr)},
          {"power", power_json(r)},
          {"common_peak", common_peak_json(r)},
          {"changed_knobs", r.changed_knobs},
          {"class_source", r.klass_source},
          {"changes", changes},
          {"warnings", r.warnings},
          {"checks", checks},
          {"breakdown", breakdown_json(r.breakdown)},
          {"policy", policy_json(r.policy)},
          {"policy_source", r.policy_source},
          {"determinism",
           {{"checked", r.determinism.checked},
            {"baseline_ok", r.determinism.baseline_ok},
            {"variant_ok", r.determinism.variant_ok},
            {"detail", r.determinism.detail}}},
          {"failed_arm", r.failed_arm ? json(to_string(*r.failed_arm)) : json(nullptr)},
          {"failure", str_or_null(r.failure)},
          {"repeats", r.repeats},
          {"interleave", to_string(r.interleave)},
          {"interleave_note", str_or_null(r.interleave_note)},
          {"conformance", conformance_json(r)},
          {"trainer_protocol",
           {{"baseline", trainer_json(r.baseline_trainer)},
            {"variant", trainer_json(r.variant_trainer)}}},
          {"throughput_test", r.interleave == Interleave::Step
                                  ? "paired t-test of the pairs' log tokens/s ratios"
                                  : "Mann-Whitney U over the repeats' tokens/s"},
          {"sequential", sequential_json(r.sequential, r.policy)},
          {"timed", r.timed},
          {"too_few_repeats", r.too_few_repeats},
          {"wall_seconds", number(r.wall_seconds)},
          {"environment", r.env},
          {"golden", golden_json(r)},
          {"git_refs", r.git_refs ? to_json(*r.git_refs) : json(nullptr)}};
}

}  // namespace lockstep::compare
