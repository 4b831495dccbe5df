#include "reports/console_reporter.h"


#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "harness/compare/memory_per_rank.h"
#include "reports/git_refs_text.h"
#include "reports/memory_table.h"
#include "reports/run_console.h"

namespace lockstep::reports {
namespace {

// Terminal columns of a UTF-8 string (one per code point; the reports use no wide characters).
size_t columns(const std::string& s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// Left-aligned columns, two spaces apart, indented by two.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], columns(row[i]));
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line = " ";
    for (size_t i = 0; i < row.size(); ++i) {
      line += " " + row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - columns(row[i]) + 1, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string general(double x) {
  if (!std::isfinite(x)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

std::vector<std::string> delta_cells(const std::string& metric, const std::string& b,
                                     const std::string& v, const compare::Delta& d,
                                     const std::string& unit) {
  return {metric,
          b,
          v,
          text::delta_value(d, unit),
          text::delta_ci(d, unit),
          text::p_value(d),
          d.known ? d.wording : ""};
}

}  // namespace

std::string ConsoleReporter::render(const compare::CompareResult& r) const {
  using text::fixed;
  std::ostringstream o;
  const bool pass = r.verdict == compare::Verdict::Pass;
  const std::string rule = unicode_ ? "══" : "==";
  o << rule << " Lockstep compare: " << (pass ? "PASS" : "FAIL") << " " << rule << "  (exit "
    << r.exit_code << ", mode " << compare::to_string(r.mode) << ", " << fixed(r.wall_seconds, 1) << " s)\n";
  o << table({{"baseline", r.baseline.name, r.baseline.config_path},
              {"variant", r.variant.name, r.variant.config_path}});

  if (r.mode == compare::Mode::Golden)
    o << "\nKnobs (golden mode: no baseline config, so no changed keys)\n  " << r.klass_source
      << "\n";
  else
    o << "\nChanged keys\n";
  if (r.git_refs) {
    const auto& g = *r.git_refs;
    o << "  (commits: " << g.config << " at two git refs, alignment " << git_text::alignment(g)
      << ")\n  base: " << git_text::commit(g.base) << "\n  head: " << git_text::commit(g.head)
      << "\n  files that differ (" << g.files.size() << "):";
    for (size_t i = 0; i < g.files.size() && i < 20; ++i) o << "\n    " << git_text::file(g.files[i]);
    if (g.files.size() > 20) o << "\n    ... (" << g.files.size() - 20 << " more in report.json)";
    o << "\n";
  }
  if (r.mode != compare::Mode::Golden && r.changes.empty())
    o << (r.git_refs ? std::string("  (") + git_text::kSameConfig + ")\n"
                     : std::string("  (none: the configs are identical)\n"));
  for (const auto& c : r.changes)
    o << "  " << c.key << ": " << c.before << " -> " << c.after << "  (" << text::knob_name(c.knob)
      << ")\n";
  if (text::any_plugins(r)) {
    o << "  plugins, baseline: " << text::plugins(r.baseline.plugins) << "\n";
    o << "  plugins, variant:  " << text::plugins(r.variant.plugins) << "\n";
  }

  if (!r.warnings.empty()) {
    o << "\nWarnings\n";
    for (const auto& w : r.warnings) o << "  ! " << w << "\n";
  }
  if (r.failed_arm)
    o << "\nRun failed\n  " << compare::to_string(*r.failed_arm) << ": " << r.failure << "\n";

  const auto& a = r.alignment;
  o << "\nAlignment ("
    << (a.applicable ? std::string(config::knob_class_name(a.klass)) : std::string("not applicable: the workload changed"))
    << ", loss at step " << a.check_step << (a.applicable ? "" : ", not judged") << ")\n";
  o << "  loss reference: " << r.loss_reference << "\n";
  std::vector<std::vector<std::string>> rows{
      {"loss", "baseline " + a.baseline_rounded, "variant " + a.variant_rounded,
       "|delta| " + general(a.abs_diff) + " (tolerance " + general(a.tolerance) + ")"}};
  if (a.band) {
    std::string seeds;
    for (auto s : a.band->seeds) seeds += (seeds.empty() ? "" : ",") + std::to_string(s);
    rows.push_back({"seed band", "seeds " + seeds,
                    fixed(a.band->lo, 4) + " .. " + fixed(a.band->hi, 4),
                    "half-width " + general(a.band->half_width) +
                        (a.band->inside ? ", variant inside" : ", variant OUTSIDE")});
  }
  if (a.envelope)
    rows.push_back({"envelope", std::to_string(a.envelope->runs) + " runs, noise " +
                                    a.envelope->noise_source +
                                    (text::noise_dtype_origin(r).empty() ? "" : ": " + text::noise_dtype_origin(r)),
                    "E(" + std::to_string(a.check_step) + ") " + general(a.envelope->at_check),
                    "bound " + general(a.envelope->factor) + " x E = " +
                        general(a.envelope->bound_at_check) +
                        (a.envelope->inside ? ", variant inside" : ", variant OUTSIDE")});
  if (a.curve.judged)
    rows.push_back({"curve rule", "steps " + std::to_string(a.curve.from_step) + "-" +
                                      std::to_string(a.curve.to_step),
                    "mean |delta| " + general(a.curve.value),
                    "bound " + general(a.curve.bound) +
                        (a.curve.passed ? ", within" : ", EXCEEDED")});
  if (a.probe.run)
    rows.push_back({"probe", std::to_string(a.probe.steps.size()) + " checkpoints",
                    "max ratio " + fixed(a.probe.ratio_max, 2) + " (" + a.probe.at_tensor + ")",
                    "bound " + general(a.probe.factor) +
                        (a.probe.passed ? ", inside" : ", OUTSIDE at " + a.probe.first_outside_tensor)});
  rows.push_back({"curve", "max |delta| " + general(a.max_abs_diff),
                  a.first_divergent_step
                      ? "first divergent step " + std::to_string(a.first_divergent_step)
                      : "no divergent step"});
  o << table(rows);
  o << "  "
    << (!a.applicable ? "not applicable"
        : a.aligned   ? "aligned"
                      : "NOT aligned")
    << (a.explanation.empty() ? "" : ": " + a.explanation) << "\n";

  o << "\nPerformance (" << text::timing_summary(r)
    << (r.timed ? "; " + text::timing_methods(r) + ")\n"
                : std::string(")\n"));
  if (!text::sequential_summary(r).empty()) o << "  " << text::sequential_summary(r) << "\n";
  const auto& b = r.baseline;
  const auto& v = r.variant;
  std::string mem_delta =
      r.delta.memory_pct ? text::signed_fixed(*r.delta.memory_pct, 1, "%") : "n/a";
  // Untimed: what was measured (peak memory of the full runs), not a table of n/a.
  if (!r.timed && r.mode == compare::Mode::Golden && v.peak_memory_bytes > 0)
    o << "  variant peak memory " << human_bytes(static_cast<double>(v.peak_memory_bytes))
      << " per rank (its full run)\n";
  if (!r.timed && r.mode != compare::Mode::Golden && b.peak_memory_bytes > 0 && v.peak_memory_bytes > 0)
    o << table({{"", "baseline", "variant", "delta"},
                {"peak memory", human_bytes(static_cast<double>(b.peak_memory_bytes)),
                 human_bytes(static_cast<double>(v.peak_memory_bytes)), mem_delta}});
  if (r.timed)
    o << table(
        {{"", "baseline", "variant", "delta", r.policy.ci_percent() + " CI", "p", ""},
         delta_cells("tokens/s", fixed(b.tokens_per_sec, 0), fixed(v.tokens_per_sec, 0),
                     r.delta.tokens_per_sec_pct, "%"),
         delta_cells(text::mfu_own_label(), text::percent(b.mfu), text::percent(v.mfu),
                     r.delta.mfu_pts, " pts"),
         delta_cells(text::mfu_common_label(), text::percent(b.mfu_common),
                     text::percent(v.mfu_common), r.delta.mfu_common_pts, " pts"),
         delta_cells(text::p50_label(r), fixed(b.step_ms.p50, 2), fixed(v.step_ms.p50, 2),
                     r.delta.p50_ms_pct, "%"),
         delta_cells(text::tail_label(r), fixed(b.step_ms_tail, 2), fixed(v.step_ms_tail, 2),
                     r.delta.p99_ms_pct, "%"),
         {"peak memory", human_bytes(static_cast<double>(b.peak_memory_bytes)),
          human_bytes(static_cast<double>(v.peak_memory_bytes)), mem_delta}});
  if (const auto note = text::common_peak_note(r); !note.empty()) o << "  " << note << "\n";
  if (const auto mde = text::power_summary(r); !mde.empty()) o << "  " << mde << "\n";
  if (r.too_few_repeats)
    o << "  ! too few repeats for a significance test: deltas are indicative only\n";
  if (r.determinism.checked)
    o << "  determinism: baseline " << (r.determinism.baseline_ok ? "ok" : "NOT deterministic")
      << ", variant " << (r.determinism.variant_ok ? "ok" : "NOT deterministic")
      << (r.determinism.detail.empty() ? "" : " (" + r.determinism.detail + ")") << "\n";

  if (compare::any_arm_sharded(r))
    o << "\nMemory per rank (" << memory_table_caption(r) << ")\n" << table(memory_table_rows(r));

  if (!r.breakdown.phases.empty()) {
    o << "\nWhere the time went (baseline " << r.baseline.bound << ", variant " << r.variant.bound
      << ")\n";
    for (const auto& f : r.breakdown.findings) o << "  * " << f << "\n";
    std::vector<std::vector<std::string>> rows{
        {"phase", "baseline ms", "share", "variant ms", "share"}};
    for (const auto& p : r.breakdown.phases)
      rows.push_back({p.phase, fixed(p.baseline_ms, 2), text::percent(p.baseline_share),
                      fixed(p.variant_ms, 2), text::percent(p.variant_share)});
    o << table(rows);
    std::vector<std::vector<std::string>> ops{
        {"operator (self ms/step)", "baseline", "variant", "delta"}};
    for (size_t i = 0; i < r.breakdown.ops.size() && i < 8; ++i) {
      const auto& op = r.breakdown.ops[i];
      ops.push_back({op.name, fixed(op.baseline_ms, 3), fixed(op.variant_ms, 3),
                     text::signed_fixed(op.variant_ms - op.baseline_ms, 3, "")});
    }
    if (ops.size() > 1) o << table(ops);
  }

  o << "\nChecks\n";
  std::vector<std::vector<std::string>> checks;
  for (const auto& c : r.checks) {
    const bool unsure = c.verdict == compare::Verdict::Inconclusive;
    const std::string mark = unicode_ ? (unsure ? "? " : c.passed ? "✔ " : "✘ ")
                                      : (unsure ? (c.passed ? "[ ?? ] " : "[FAIL?] ")
                                                : c.passed ? "[ ok ] " : "[FAIL] ");
    checks.push_back({mark + c.name, c.detail});
  }
  o << (checks.empty() ? "  (none)\n" : table(checks));
  if (const auto unsure = text::inconclusive_summary(r); !unsure.empty())
    o << "  " << unsure << "\n";

  o << "\nPolicy" << (r.policy_source.empty() ? "" : " (" + r.policy_source + ")") << "\n";
  for (const auto& line : text::lines(r.policy.describe())) o << "  " << line << "\n";
  if (!r.out_dir.empty()) o << "\nReports in " << r.out_dir << "\n";
  return o.str();
}

}  // namespace lockstep::reports
