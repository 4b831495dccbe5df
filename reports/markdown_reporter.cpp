#include "reports/markdown_reporter.h"

#include <sstream>

#include "harness/compare/memory_per_rank.h"
#include "harness/util/format.h"
#include "reports/git_refs_text.h"
#include "reports/memory_table.h"
#include "reports/run_console.h"

namespace lockstep::reports {

std::string markdown_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '|':
      case '#':
        out += '\\';
        out += c;
        break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '\n':
      case '\r': out += ' '; break;
      default: out += c;
    }
  }
  return out;
}

std::string markdown_code(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return (out.find('`') == std::string::npos ? "`" + out + "`" : "`` " + out + " ``");
}

std::string markdown_row(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const auto& c : cells) out += " " + c + " |";
  return out + "\n";
}

namespace {

std::string delta_markdown_row(const std::string& metric, const std::string& b,
                               const std::string& v, const compare::Delta& d,
                               const std::string& unit) {
  std::string delta = text::delta_value(d, unit);
  if (d.known && d.significant) delta = "**" + delta + "**";
  return markdown_row({metric, b, v, delta, text::delta_ci(d, unit), text::p_value(d),
                       d.known ? markdown_escape(d.wording) : ""});
}

// compare --base-ref: the two commits and the files that differ, before the (empty) config diff.
void markdown_git_refs(std::ostringstream& o, const compare::GitRefs& g) {
  o << "**Commits** (" << markdown_code(g.config) << " at two git refs; alignment "
    << markdown_escape(git_text::alignment(g)) << ")\n\n"
    << "- base: " << markdown_escape(git_text::commit(g.base)) << "\n"
    << "- head: " << markdown_escape(git_text::commit(g.head)) << "\n\n"
    << "**Files that differ** (" << g.files.size() << ")";
  if (g.files.empty()) o << ": none";
  o << "\n\n";
  for (const auto& f : g.files) o << "- " << markdown_escape(git_text::file(f)) << "\n";
  if (!g.files.empty()) o << "\n";
}

// Golden mode: how the golden file judged, and its environment beside the variant run's.
void golden_environments(std::ostringstream& o, const compare::CompareResult& r) {
  const compare::GoldenSource& g = *r.golden;
  o << "\nGolden file (format " << g.format << "): " << markdown_escape(g.judged_by) << "\n";
  if (g.environment.empty()) return;
  o << "\n" << markdown_row({"Environment", "Golden (export)", "This run", ""}) << "|---|---|---|---|\n";
  for (const auto& [k, v] : g.environment) {
    auto it = r.env.find(k);
    const std::string here = it == r.env.end() ? "unknown" : it->second;
    o << markdown_row({k, markdown_code(v), markdown_code(here), v == here ? "" : "differs"});
  }
}

}  // namespace

std::string MarkdownReporter::render(const compare::CompareResult& r) const {
  using text::fixed;
  std::ostringstream o;
  const bool pass = r.verdict == compare::Verdict::Pass;
  o << "## " << (pass ? "✅" : "❌") << " Lockstep: " << (pass ? "PASS" : "FAIL") << " — "
    << markdown_escape(r.variant.name) << " vs " << markdown_escape(r.baseline.name) << "\n\n";
  o << "exit " << r.exit_code << " · mode " << markdown_escape(compare::to_string(r.mode)) << " · "
    << text::timing_summary(r) << " · " << fixed(r.wall_seconds, 1) << " s\n\n";
  for (const auto& w : r.warnings) o << "> ⚠️ " << markdown_escape(w) << "\n";
  if (r.too_few_repeats)
    o << "> ⚠️ too few repeats for a significance test: deltas are indicative only\n";
  if (!r.warnings.empty() || r.too_few_repeats) o << "\n";
  if (r.failed_arm)
    o << "**Run failed:** " << markdown_escape(compare::to_string(*r.failed_arm)) << " — "
      << markdown_escape(r.failure) << "\n\n";

  if (r.mode == compare::Mode::Golden) {
    o << "**Knobs** (golden mode: no baseline config, so no changed keys): "
      << markdown_escape(r.klass_source) << "\n";
  } else {
    if (r.git_refs) markdown_git_refs(o, *r.git_refs);
    o << markdown_row({"Changed key", "Baseline", "Variant", "Kind"}) << "|---|---|---|---|\n";
    if (r.changes.empty())
      o << markdown_row({r.git_refs ? git_text::kSameConfig : "(none)", "", "", ""});
    for (const auto& c : r.changes)
      o << markdown_row({markdown_code(c.key), markdown_code(c.before), markdown_code(c.after),
                         text::knob_name(c.knob)});
  }
  if (text::any_plugins(r))
    o << "\nPlugins: baseline " << markdown_escape(text::plugins(r.baseline.plugins))
      << "; variant " << markdown_escape(text::plugins(r.variant.plugins)) << "\n";

  if (r.conformance || !r.conformance_failure.empty()) {  // the table: every failing case, else the worst
    o << "\n**Kernel conformance** (against each slot's exact math in fp64): ";
    if (!r.conformance_failure.empty()) {
      o << "❌ did not run — " << markdown_escape(r.conformance_failure) << "\n";
    } else {
      const auto& c = *r.conformance;
      o << (c.passed() ? "✅ " : "❌ ") << c.rows.size() << " checks of "
        << markdown_escape([&] {
             std::string k;
             for (const auto& n : c.kernels) k += (k.empty() ? "" : ", ") + n;
             return k;
           }()) << "\n\n"
        << markdown_row({"Kernel", "Case", "Shape", "Direction", "Dtype", "Max error", "Bound", "Ratio", ""})
        << "|---|---|---|---|---|--:|--:|--:|---|\n";
      std::vector<const ConformanceRow*> shown;
      for (const auto& x : c.rows)
        if (!x.passed) shown.push_back(&x);
      if (shown.empty() && c.worst()) shown.push_back(c.worst());
      for (const auto* x : shown)
        o << markdown_row({markdown_code(x->slot + " " + x->kernel), x->case_name, x->shape, x->direction,
                           x->dtype, util::format_number("%.3g", x->error),
                           util::format_number("%.3g", x->bound), util::format_number("%.2f", x->ratio()),
                           x->passed ? "✅" : "❌"});
    }
  }

  const auto& a = r.alignment;
  o << "\n**Alignment** (" << markdown_escape(config::knob_class_name(a.klass)) << ", loss at step " << a.check_step << "): "
    << (!a.applicable ? "➖ not applicable"
        : a.aligned   ? "✅ aligned"
                      : "❌ not aligned");
  if (!a.explanation.empty()) o << " — " << markdown_escape(a.explanation);
  o << "\n\nLoss reference: " << markdown_escape(r.loss_reference);
  o << "\n\n"
    << markdown_row({"", "Baseline", "Variant", "\\|Δ\\|", "Tolerance", "Max \\|Δ\\|",
                     "First divergent step"})
    << "|---|--:|--:|--:|--:|--:|--:|\n"
    << markdown_row({"loss", a.baseline_rounded, a.variant_rounded, fixed(a.abs_diff, 6),
                     fixed(a.tolerance, 6), fixed(a.max_abs_diff, 6),
                     a.first_divergent_step ? std::to_string(a.first_divergent_step) : "none"});
  if (a.envelope)
    o << "\nNoise envelope (" << a.envelope->runs
      << (r.golden ? " perturbed runs where the golden file was exported" : " perturbed baseline runs")
      << ", weight noise " << markdown_escape(a.envelope->noise_source)
      << (text::noise_dtype_origin(r).empty() ? "" : ": " + markdown_escape(text::noise_dtype_origin(r)))
      << "): E(" << a.check_step
      << ") = " << fixed(a.envelope->at_check, 6) << ", bound " << util::format_number("%g", a.envelope->factor)
      << " × E = " << fixed(a.envelope->bound_at_check, 6) << "; variant "
      << (a.envelope->inside ? "inside" : "**outside**") << "\n";
  if (a.curve.judged)
    o << "\nCurve rule: mean |Δ| over steps " << a.curve.from_step << "–" << a.curve.to_step
      << " = " << fixed(a.curve.value, 6) << ", bound " << fixed(a.curve.bound, 6) << " ("
      << (a.curve.bound_rule == "tolerance" ? "the tolerance" : "factor × mean envelope") << "); "
      << (a.curve.passed ? "within" : "**exceeded**") << "\n";
  if (const std::string ps = text::probe_summary(a); !ps.empty())
    o << "\n" << markdown_escape("F" + ps.substr(1)) << "\n";
  if (a.band)
    o << "\nSeed band: " << fixed(a.band->lo, 4) << " … " << fixed(a.band->hi, 4) << " (half-width "
      << fixed(a.band->half_width, 6) << ", " << a.band->seeds.size() << " seeds); variant "
      << (a.band->inside ? "inside" : "**outside**") << "\n";
  if (r.golden) golden_environments(o, r);

  const auto& b = r.baseline;
  const auto& v = r.variant;
  if (!r.timed) {
    // What was measured (peak memory of the full runs), not a table of n/a.
    o << "\n**Performance**: " << markdown_escape(text::timing_summary(r)) << "\n";
    if (r.mode == compare::Mode::Golden && v.peak_memory_bytes > 0)
      o << "\nVariant peak memory " << human_bytes(static_cast<double>(v.peak_memory_bytes))
        << " per rank (its full run).\n";
    if (r.mode != compare::Mode::Golden && b.peak_memory_bytes > 0 && v.peak_memory_bytes > 0)
      o << "\n"
        << markdown_row({"Metric", "Baseline", "Variant", "Δ"}) << "|---|--:|--:|--:|\n"
        << markdown_row(
               {"peak memory", human_bytes(static_cast<double>(b.peak_memory_bytes)),
                human_bytes(static_cast<double>(v.peak_memory_bytes)),
                r.delta.memory_pct ? text::signed_fixed(*r.delta.memory_pct, 1, "%") : "n/a"});
  } else {
    o << "\n**Performance** (" << text::timing_methods(r) << "; bold = significant)"
      << text::sentence(markdown_escape(text::sequential_summary(r))) << "\n\n"
      << markdown_row(
             {"Metric", "Baseline", "Variant", "Δ", r.policy.ci_percent() + " CI", "p", ""})
      << "|---|--:|--:|--:|--:|--:|---|\n"
      << delta_markdown_row("tokens/s", fixed(b.tokens_per_sec, 0), fixed(v.tokens_per_sec, 0),
                            r.delta.tokens_per_sec_pct, "%")
      << delta_markdown_row(text::mfu_own_label(), text::percent(b.mfu), text::percent(v.mfu),
                            r.delta.mfu_pts, " pts")
      << delta_markdown_row(text::mfu_common_label(), text::percent(b.mfu_common),
                            text::percent(v.mfu_common), r.delta.mfu_common_pts, " pts")
      << delta_markdown_row(text::p50_label(r), fixed(b.step_ms.p50, 2), fixed(v.step_ms.p50, 2),
                            r.delta.p50_ms_pct, "%")
      << delta_markdown_row(markdown_escape(text::tail_label(r)), fixed(b.step_ms_tail, 2),
                            fixed(v.step_ms_tail, 2), r.delta.p99_ms_pct, "%")
      << markdown_row({"peak memory", human_bytes(static_cast<double>(b.peak_memory_bytes)),
                       human_bytes(static_cast<double>(v.peak_memory_bytes)),
                       r.delta.memory_pct ? text::signed_fixed(*r.delta.memory_pct, 1, "%") : "n/a",
                       "", "", ""});
    for (const auto& line : {text::common_peak_note(r), text::power_summary(r)})
      if (!line.empty()) o << "\n" << markdown_escape(line) << "\n";
  }

  if (compare::any_arm_sharded(r)) {
    const auto rows = memory_table_rows(r);
    o << "\n**Memory per rank** (" << markdown_escape(memory_table_caption(r)) << ")\n\n"
      << markdown_row({"Per rank", "Baseline", "Variant", "Δ"}) << "|---|--:|--:|--:|\n";
    for (size_t i = 1; i < rows.size(); ++i) o << markdown_row(rows[i]);
  }

  if (!r.breakdown.phases.empty()) {
    o << "\n**Where the time went** (baseline " << markdown_escape(r.baseline.bound) << ", variant "
      << markdown_escape(r.variant.bound) << ")\n\n";
    for (const auto& f : r.breakdown.findings) o << "- " << markdown_escape(f) << "\n";
    o << "\n" << markdown_row({"Phase", "Baseline", "Variant"}) << "|---|--:|--:|\n";
    for (const auto& p : r.breakdown.phases)
      o << markdown_row({p.phase,
                         fixed(p.baseline_ms, 2) + " ms (" + text::percent(p.baseline_share) + ")",
                         fixed(p.variant_ms, 2) + " ms (" + text::percent(p.variant_share) + ")"});
    o << "\n<details><summary>Top operators (self ms/step)</summary>\n\n"
      << markdown_row({"Operator", "Baseline", "Variant", "Δ"}) << "|---|--:|--:|--:|\n";
    for (const auto& op : r.breakdown.ops)
      o << markdown_row({markdown_code(op.name), fixed(op.baseline_ms, 3), fixed(op.variant_ms, 3),
                         text::signed_fixed(op.variant_ms - op.baseline_ms, 3, "")});
    o << "\n</details>\n";
  }
  o << "\n**Checks**\n\n" << markdown_row({"", "Check", "Detail"}) << "|---|---|---|\n";
  for (const auto& c : r.checks)
    o << markdown_row({c.verdict == compare::Verdict::Inconclusive ? (c.passed ? "❔" : "❔❌")
                       : c.passed                                  ? "✅"
                                                                   : "❌",
                       markdown_escape(c.name), markdown_escape(c.detail)});
  if (r.checks.empty()) o << markdown_row({"", "(none ran)", ""});
  if (const auto unsure = text::inconclusive_summary(r); !unsure.empty())
    o << "\n" << markdown_escape(unsure) << "\n";

  o << "\n<details><summary>Policy"
    << (r.policy_source.empty() ? "" : " (" + markdown_escape(r.policy_source) + ")")
    << "</summary>\n\n```text\n"
    << r.policy.describe() << "\n```\n\n</details>\n";
  return o.str();
}

}  // namespace lockstep::reports
