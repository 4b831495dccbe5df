#include "reports/reporter.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "harness/util/format.h"
#include "reports/console_reporter.h"
#include "reports/html_reporter.h"
#include "reports/json_reporter.h"
#include "reports/junit_reporter.h"
#include "reports/markdown_reporter.h"

namespace lockstep::reports {

std::unique_ptr<Reporter> make_reporter(const std::string& format) {
  if (format == "console") return std::make_unique<ConsoleReporter>();
  if (format == "json") return std::make_unique<JsonReporter>();
  if (format == "markdown") return std::make_unique<MarkdownReporter>();
  if (format == "html") return std::make_unique<HtmlReporter>();
  if (format == "junit") return std::make_unique<JunitReporter>();
  throw std::invalid_argument("unknown report format '" + format +
                              "' (known: console, json, markdown, html, junit)");
}

const std::vector<std::string>& report_formats() {
  static const std::vector<std::string> formats{"json", "markdown", "html", "junit"};
  return formats;
}

std::vector<std::filesystem::path> write_reports(const compare::CompareResult& r,
                                                 const std::filesystem::path& dir) {
  ReporterList<compare::CompareResult> reporters;
  for (const auto& f : report_formats()) reporters.push_back(make_reporter(f));
  return write_files(reporters, r, dir);
}

namespace text {

std::string delta_value(const compare::Delta& d, const std::string& unit) {
  return d.known ? signed_fixed(d.point, 1, unit) : "unknown";
}

std::string delta_ci(const compare::Delta& d, const std::string& unit) {
  if (!d.known) return "-";
  return "[" + signed_fixed(d.ci_lo, 1, unit) + ", " + signed_fixed(d.ci_hi, 1, unit) + "]";
}

std::string p_value(const compare::Delta& d) {
  if (!d.known || !std::isfinite(d.p_value)) return "-";
  return d.p_value < 0.001 ? "<0.001" : fixed(d.p_value, 3);
}

std::string knob_name(config::Knob k) {
  switch (k) {
    case config::Knob::None: return "bookkeeping";
    case config::Knob::Workload: return "workload";
    case config::Knob::Exact: return "exact";
    case config::Knob::Approximate: return "approximate";
    case config::Knob::Fault: return "fault";
  }
  return "?";
}

std::string plugins(const std::vector<PluginRef>& p) {
  std::string out;
  for (const auto& x : p) out += (out.empty() ? "" : "; ") + x.file + " (sha256 " + x.sha256 + ")";
  return out.empty() ? "none" : out;
}

bool any_plugins(const compare::CompareResult& r) {
  return !r.baseline.plugins.empty() || !r.variant.plugins.empty();
}

}  // namespace text
std::string text::timing_summary(const compare::CompareResult& r) {
  if (r.timed) return util::count_of(r.repeats, "repeat") + " per arm";
  if (r.mode == compare::Mode::Golden) return "not timed (golden mode: no second arm to time against)";
  if (r.failed_arm) return "not timed (a run failed)";
  return "not timed (the loss does not align)";
}

std::string text::timing_methods(const compare::CompareResult& r) {
  const std::string rest = r.policy.ci_percent() + " bootstrap CI, Mann-Whitney p";
  if (r.interleave != compare::Interleave::Step) return "medians, " + rest;
  return "medians; tokens/s: paired t over the pairs' log ratios, " + r.policy.ci_percent() +
         " CI; the rest: " + rest;
}

std::string text::noise_dtype_origin(const compare::CompareResult& r) {
  const auto& e = r.alignment.envelope;
  if (!e || e->noise_dtype.from == compare::DtypeFrom::Gate) return "";
  const std::string& d = e->noise_dtype.dtype;
  const std::string arm = compare::to_string(e->noise_dtype.arm);
  std::string s;
  switch (e->noise_dtype.from) {
    case compare::DtypeFrom::Hello: s = d + ", declared in the " + arm + "'s hello"; break;
    case compare::DtypeFrom::Config: s = d + ", the " + arm + "'s [precision] compute"; break;
    default:
      s = d + ", the default (the " + arm + " declares no compute dtype in its hello or [precision])";
  }
  const std::string& seen = r.variant_trainer.observed_compute;
  if (!seen.empty() && seen != r.variant_trainer.compute)
    s += "; the variant's trainer was seen computing in " + seen + " (observed, not declared)";
  return s;
}

std::string text::probe_summary(const compare::Alignment& a) {
  const auto& p = a.probe;
  if (!p.run) return p.note.empty() ? "" : "function probe " + p.note;
  std::string s = "function probe (" + std::to_string(p.steps.size()) + " checkpoints x " +
                  std::to_string(p.tensors.size()) + " tensors, " +
                  util::count_of(p.noise_runs, "noise probe") + "): largest ratio " +
                  fixed(p.ratio_max, 2) + " (" + p.at_tensor + " at step " +
                  std::to_string(p.at_step) + "), bound " + util::format_number("%g", p.factor);
  if (p.passed) return s + ": inside";
  return s + ": OUTSIDE, first in forward order at " + p.first_outside_tensor + " (step " +
         std::to_string(p.first_outside_step) + ")";
}

std::string text::sequential_summary(const compare::CompareResult& r) {
  const auto& s = r.sequential;
  if (!s.enabled || s.looks.empty()) return "";
  const auto& last = s.looks.back();
  const std::string why = s.stopped == "decisive"      ? "every timing check is decisive"
                          : s.stopped == "max_repeats" ? "the last planned look is done"
                          : s.stopped == "max_minutes"
                              ? "the next look would pass [gate] max_minutes = " +
                                    util::format_number("%g", r.policy.max_minutes)
                              : "a run failed";
  const bool any_fail = std::any_of(last.verdicts.begin(), last.verdicts.end(), [](const auto& v) {
    return v.second == compare::Verdict::Fail;
  });
  const size_t planned = r.policy.looks().size();
  return "repeats \"auto\": stopped at look " + std::to_string(s.looks.size()) + " of " +
         std::to_string(planned) + " (" + util::count_of(last.repeats, "repeat") +
         " per arm, " + fixed(last.minutes, 1) + " min) because " +
         (s.stopped == "decisive" && any_fail ? std::string("a timing check failed") : why) +
         "; each look tests at alpha/" + std::to_string(planned) + " = " +
         util::format_number("%.3g", r.policy.check_level()) +
         " (group-sequential, Bonferroni boundary)";
}

std::string text::sentence(const std::string& s) {
  return s.empty() ? "" : " " + s + ".";
}

namespace {
std::string pct_or_unknown(double x) {
  return std::isfinite(x) ? text::fixed(x, 1) + "%" : "unknown";
}
}  // namespace

std::string text::p50_label(const compare::CompareResult& r) {
  return "step ms, P50 (n=" + r.tail.n_per_arm() + ")";
}

std::string text::tail_label(const compare::CompareResult& r) {
  return r.tail.is_p99() ? "step ms, P99 (n=" + r.tail.n_per_arm() + ")" : "step ms, " + r.tail.label;
}

std::string text::mfu_own_label() { return "MFU (own peak)"; }
std::string text::mfu_common_label() { return "MFU (common peak)"; }

std::string text::common_peak_note(const compare::CompareResult& r) {
  if (!r.timed || !std::isfinite(r.common_peak.flops)) return "";
  return "MFU (own peak): each arm against its own dtype's peak; MFU (common peak): both against "
         "the " + r.common_peak.arm + "'s peak, " +
         util::format_number("%.3g", r.common_peak.flops) + " FLOP/s (" + r.common_peak.source +
         "), the larger of the two, so it moves with tokens/s";
}

std::string text::power_summary(const compare::CompareResult& r) {
  if (!r.timed || !r.power.known) return "";
  return "minimum detectable effect (power " + fixed(r.power.power, 1) + ", level " +
         util::format_number("%.3g", r.power.level) + "): tokens/s " +
         pct_or_unknown(r.power.tokens_per_sec_mde_pct) + ", P50 " +
         pct_or_unknown(r.power.p50_mde_pct) + ", " + (r.tail.is_p99() ? "P99" : r.tail.label) +
         " " + pct_or_unknown(r.power.p99_mde_pct);
}

std::string text::inconclusive_summary(const compare::CompareResult& r) {
  int64_t n = 0;
  for (const auto& c : r.checks) n += c.verdict == compare::Verdict::Inconclusive ? 1 : 0;
  if (n == 0) return "";
  return util::count_of(n, "timing check") + " inconclusive (could not tell; on_inconclusive = " +
         std::string(gate::to_string(r.policy.on_inconclusive)) +
         (r.policy.inconclusive_passes() ? ": passes" : ": fails") + ")";
}

}  // namespace lockstep::reports
