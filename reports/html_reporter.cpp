#include "reports/html_reporter.h"


#include <sstream>

#include "harness/compare/memory_per_rank.h"
#include "harness/util/format.h"
#include "reports/compare_plots.h"
#include "reports/git_refs_text.h"
#include "reports/html_page.h"
#include "reports/memory_table.h"
#include "reports/run_console.h"

namespace lockstep::reports {

namespace {

// The comparison report's own rules, on top of the shared page stylesheet (reports/html_page.h).
const char* kComparisonCss = R"css(:root{--base:#1f77b4;--var:#e8590c}
.pill.ok{background:var(--ok)}.pill.bad{background:var(--bad)}.pill.na{background:#6c757d}
.yes{color:var(--ok);font-weight:700}.no{color:var(--bad);font-weight:700}
.sig{font-weight:700}
.arm-b{color:var(--base);font-weight:600}.arm-v{color:var(--var);font-weight:600}
details summary{cursor:pointer;font-weight:600}
)css";

using text::fixed;

std::string delta_html_row(const std::string& metric, const std::string& b, const std::string& v,
                           const compare::Delta& d, const std::string& unit) {
  std::string delta = html_escape(text::delta_value(d, unit));
  if (d.known && d.significant) delta = "<span class=\"sig\">" + delta + "</span>";
  return "<tr>" + td(metric) + td(html_escape(b), true) + td(html_escape(v), true) +
         td(delta, true) + td(html_escape(text::delta_ci(d, unit)), true) +
         td(html_escape(text::p_value(d)), true) + td(d.known ? html_escape(d.wording) : "") +
         "</tr>\n";
}

void banner(std::ostream& o, const compare::CompareResult& r) {
  const bool pass = r.verdict == compare::Verdict::Pass;
  o << "<header class=\"banner " << (pass ? "pass" : "fail") << "\"><h1>"
    << (pass ? "✔ PASS" : "✘ FAIL") << "</h1><p>variant <b>" << html_escape(r.variant.name)
    << "</b> vs baseline <b>" << html_escape(r.baseline.name) << "</b> · exit " << r.exit_code
    << " · mode " << html_escape(compare::to_string(r.mode)) << " · " << html_escape(text::timing_summary(r)) << " · "
    << fixed(r.wall_seconds, 1) << " s</p></header>\n<main>\n";
  for (const auto& w : r.warnings) o << "<div class=\"notice\">⚠ " << html_escape(w) << "</div>\n";
  if (r.too_few_repeats)
    o << "<div class=\"notice\">⚠ too few repeats for a significance test: deltas are indicative "
         "only</div>\n";
  if (r.failed_arm)
    o << "<div class=\"notice bad\"><b>Run failed:</b> "
      << html_escape(compare::to_string(*r.failed_arm)) << ": " << html_escape(r.failure)
      << "</div>\n";
}

// compare --base-ref: the two commits (each beside its arm's colour) and the files that differ.
void html_git_refs(std::ostream& o, const compare::GitRefs& g) {
  o << "<section><h2>Commits</h2>\n<p>" << html_code(g.config) << " at two git refs; alignment "
    << html_escape(git_text::alignment(g)) << "</p>\n<p><span class=\"arm-b\">baseline</span> "
    << html_escape(git_text::commit(g.base)) << "<br><span class=\"arm-v\">variant</span> "
    << html_escape(git_text::commit(g.head)) << "</p>\n<p>Files that differ (" << g.files.size()
    << ")" << (g.files.empty() ? ": none" : ":") << "</p>\n";
  if (!g.files.empty()) {
    o << "<ul>\n";
    for (const auto& f : g.files) o << "<li>" << html_escape(git_text::file(f)) << "</li>\n";
    o << "</ul>\n";
  }
  o << "</section>\n";
}

void config_diff(std::ostream& o, const compare::CompareResult& r) {
  if (r.mode == compare::Mode::Golden) {  // no baseline config: no diff to show
    o << "<section><h2>Configuration</h2>\n<p><span class=\"arm-b\">golden</span> "
      << html_code(r.baseline.config_path) << " &nbsp; <span class=\"arm-v\">variant</span> "
      << html_code(r.variant.config_path)
      << "</p>\n<p>Golden mode: no baseline config, so no changed "
      << "keys; " << html_escape(r.klass_source) << ".</p></section>\n";
    return;
  }
  if (r.git_refs) html_git_refs(o, *r.git_refs);
  o << "<section><h2>Configuration diff</h2>\n<p><span class=\"arm-b\">baseline</span> "
    << html_code(r.baseline.config_path) << " &nbsp; <span class=\"arm-v\">variant</span> "
    << html_code(r.variant.config_path) << "</p>\n"
    << "<table><tr><th>Key</th><th>Baseline</th><th>Variant</th><th>Kind</th></tr>\n";
  if (r.changes.empty())
    o << "<tr><td colspan=\"4\" class=\"muted\">"
      << (r.git_refs ? git_text::kSameConfig : "none: the configs are identical") << "</td></tr>\n";
  for (const auto& c : r.changes)
    o << "<tr>" << td(html_code(c.key)) << td(html_code(c.before)) << td(html_code(c.after))
      << td(html_escape(text::knob_name(c.knob))) << "</tr>\n";
  o << "</table>\n";
  if (text::any_plugins(r))
    o << "<p>Plugins: <span class=\"arm-b\">baseline</span> "
      << html_escape(text::plugins(r.baseline.plugins)) << " &nbsp; <span class=\"arm-v\">variant</span> "
      << html_escape(text::plugins(r.variant.plugins)) << "</p>\n";
  o << "</section>\n";
}

void alignment(std::ostream& o, const compare::CompareResult& r) {
  const auto& a = r.alignment;
  o << "<section><h2>Loss alignment <span class=\"pill "
    << (!a.applicable ? "na\">not applicable"
        : a.aligned   ? "ok\">aligned"
                      : "bad\">not aligned")
    << "</span></h2>\n<p>" << html_escape(config::knob_class_name(a.klass)) << " knob, loss at step " << a.check_step;
  if (!a.explanation.empty()) o << ": " << html_escape(a.explanation);
  o << "</p>\n<p class=\"muted\">Loss reference: " << html_escape(r.loss_reference) << "</p>\n";
  o << "<table><tr><th class=\"num\">Baseline</th><th class=\"num\">Variant</th><th "
       "class=\"num\">|Δ|</th>"
       "<th class=\"num\">Tolerance</th><th>Equal to 3 dp</th><th class=\"num\">Max |Δ| "
       "(curve)</th>"
       "<th class=\"num\">First divergent step</th></tr>\n<tr>"
    << td(html_escape(a.baseline_rounded), true) << td(html_escape(a.variant_rounded), true)
    << td(fixed(a.abs_diff, 6), true) << td(fixed(a.tolerance, 6), true)
    << td(a.equal_to_3dp ? "<span class=\"yes\">yes</span>" : "<span class=\"no\">no</span>")
    << td(fixed(a.max_abs_diff, 6), true)
    << td(a.first_divergent_step ? std::to_string(a.first_divergent_step) : "none", true)
    << "</tr></table>\n";
  if (a.band) {
    std::string seeds;
    for (auto s : a.band->seeds) seeds += (seeds.empty() ? "" : ", ") + std::to_string(s);
    o << "<p>Seed band over seeds " << html_escape(seeds) << ": " << fixed(a.band->lo, 4) << " … "
      << fixed(a.band->hi, 4) << " (half-width " << fixed(a.band->half_width, 6)
      << "); the variant is "
      << (a.band->inside ? "<span class=\"yes\">inside</span>"
                         : "<span class=\"no\">outside</span>")
      << ".</p>\n";
  }
  if (a.envelope)
    o << "<p>Noise envelope from " << a.envelope->runs
      << " perturbed baseline runs (weight noise " << html_escape(a.envelope->noise_source)
      << (text::noise_dtype_origin(r).empty() ? "" : ": " + html_escape(text::noise_dtype_origin(r)))
      << ", trailing window " << a.envelope->window << " steps): E(" << a.check_step
      << ") = " << fixed(a.envelope->at_check, 6) << ", bound " << util::format_number("%g", a.envelope->factor)
      << " × E = " << fixed(a.envelope->bound_at_check, 6) << "; the variant is "
      << (a.envelope->inside ? "<span class=\"yes\">inside</span>"
                             : "<span class=\"no\">outside</span>")
      << ".</p>\n";
  if (a.curve.judged)
    o << "<p>Curve rule: mean |Δ| over steps " << a.curve.from_step << "–" << a.curve.to_step
      << " = " << fixed(a.curve.value, 6) << ", bound " << fixed(a.curve.bound, 6) << " ("
      << (a.curve.bound_rule == "tolerance" ? "the tolerance" : "factor × mean envelope")
      << "): "
      << (a.curve.passed ? "<span class=\"yes\">within</span>"
                         : "<span class=\"no\">exceeded</span>")
      << ".</p>\n";
  if (const std::string ps = text::probe_summary(a); !ps.empty())
    o << "<p>" << html_escape("F" + ps.substr(1)) << ".</p>\n";
  o << "<div class=\"plots\">" << figure("Loss vs step", loss_curves_plot(r))
    << figure("Loss difference (variant − baseline)", loss_difference_plot(r))
    << "</div></section>\n";
}

void performance(std::ostream& o, const compare::CompareResult& r) {
  const auto& b = r.baseline;
  const auto& v = r.variant;
  auto ci = [](const compare::ArmResult& a) {
    return "[" + fixed(a.tokens_per_sec_ci_lo, 0) + ", " + fixed(a.tokens_per_sec_ci_hi, 0) + "]";
  };
  if (!r.timed) {  // what was measured (peak memory of the full runs), not a table of n/a
    o << "<section><h2>Performance</h2>\n<p class=\"muted\">"
      << html_escape(text::timing_summary(r)) << ".</p>\n";
    if (r.mode == compare::Mode::Golden && v.peak_memory_bytes > 0)
      o << "<p>Variant peak memory " << human_bytes(static_cast<double>(v.peak_memory_bytes))
        << " per rank (its full run).</p>\n";
    if (r.mode != compare::Mode::Golden && b.peak_memory_bytes > 0 && v.peak_memory_bytes > 0)
      o << "<table><tr><th>Metric</th><th class=\"num\">Baseline</th><th "
           "class=\"num\">Variant</th><th class=\"num\">Δ</th></tr>\n<tr>"
        << td("peak memory") << td(human_bytes(static_cast<double>(b.peak_memory_bytes)), true)
        << td(human_bytes(static_cast<double>(v.peak_memory_bytes)), true)
        << td(r.delta.memory_pct ? text::signed_fixed(*r.delta.memory_pct, 1, "%") : "n/a", true)
        << "</tr></table>\n";
    o << "</section>\n";
    return;
  }
  o << "<section><h2>Performance</h2>\n<p class=\"muted\">"
    << (r.timed ? "Medians over " + std::to_string(r.repeats) +
                      " interleaved repeats per arm (" + html_escape(text::timing_methods(r)) +
                      "; two-sided p-values). Bold deltas are significant." +
                      text::sentence(html_escape(text::sequential_summary(r)))
                : html_escape(text::timing_summary(r)) + ".")
    << "</p>\n"
    << "<table><tr><th>Metric</th><th class=\"num\">Baseline</th><th class=\"num\">Variant</th><th "
       "class=\"num\">Δ</th>"
       "<th class=\"num\">"
    << r.policy.ci_percent() << " CI</th><th class=\"num\">p</th><th></th></tr>\n"
    << delta_html_row("tokens/s", fixed(b.tokens_per_sec, 0), fixed(v.tokens_per_sec, 0),
                      r.delta.tokens_per_sec_pct, "%")
    << "<tr>" << td("<span class=\"muted\">tokens/s " + r.policy.ci_percent() + " CI</span>")
    << td(ci(b), true)
    << td(ci(v), true) << "<td colspan=\"4\"></td></tr>\n"
    << delta_html_row(text::mfu_own_label(), text::percent(b.mfu), text::percent(v.mfu),
                      r.delta.mfu_pts, " pts")
    << delta_html_row(text::mfu_common_label(), text::percent(b.mfu_common),
                      text::percent(v.mfu_common), r.delta.mfu_common_pts, " pts")
    << delta_html_row(html_escape(text::p50_label(r)), fixed(b.step_ms.p50, 2),
                      fixed(v.step_ms.p50, 2), r.delta.p50_ms_pct, "%")
    << delta_html_row(html_escape(text::tail_label(r)), fixed(b.step_ms_tail, 2),
                      fixed(v.step_ms_tail, 2), r.delta.p99_ms_pct, "%")
    << "<tr>" << td("peak memory")
    << td(human_bytes(static_cast<double>(b.peak_memory_bytes)), true)
    << td(human_bytes(static_cast<double>(v.peak_memory_bytes)), true)
    << td(r.delta.memory_pct ? text::signed_fixed(*r.delta.memory_pct, 1, "%") : "n/a", true)
    << "<td colspan=\"3\"></td></tr>\n"
    << "</table>\n";
  for (const auto& line : {text::common_peak_note(r), text::power_summary(r)})
    if (!line.empty()) o << "<p class=\"muted\">" << html_escape(line) << ".</p>\n";
  if (r.determinism.checked)
    o << "<p>Determinism: baseline "
      << (r.determinism.baseline_ok ? "<span class=\"yes\">ok</span>"
                                    : "<span class=\"no\">not deterministic</span>")
      << ", variant "
      << (r.determinism.variant_ok ? "<span class=\"yes\">ok</span>"
                                   : "<span class=\"no\">not deterministic</span>")
      << (r.determinism.detail.empty() ? "" : " (" + html_escape(r.determinism.detail) + ")")
      << "</p>\n";
  o << "<div class=\"plots\">"
    << figure("Step latency distribution (ECDF, all repeats pooled)", latency_plot(r))
    << figure("Throughput per arm", throughput_plot(r)) << "</div></section>\n";
}

void memory_per_rank(std::ostream& o, const compare::CompareResult& r) {
  if (!compare::any_arm_sharded(r)) return;
  const auto rows = memory_table_rows(r);
  o << "<section><h2>Memory per rank</h2>\n<p class=\"muted\">"
    << html_escape(memory_table_caption(r))
    << "; from each arm's full-length run.</p>\n<table><tr><th>Per rank</th><th "
       "class=\"num\">Baseline</th><th class=\"num\">Variant</th><th class=\"num\">Δ</th></tr>\n";
  for (size_t i = 1; i < rows.size(); ++i)
    o << "<tr>" << td(html_escape(rows[i][0])) << td(html_escape(rows[i][1]), true)
      << td(html_escape(rows[i][2]), true) << td(html_escape(rows[i][3]), true) << "</tr>\n";
  o << "</table></section>\n";
}

void checks_and_policy(std::ostream& o, const compare::CompareResult& r) {
  if (!r.breakdown.phases.empty()) {
    const auto& bd = r.breakdown;
    o << "<section><h2>Where the time went</h2>\n<p class=\"muted\">Medians over the timing "
         "repeats; operators from each "
         "repeat's profiled window (self time per step). Baseline "
      << html_escape(r.baseline.bound) << ", variant " << html_escape(r.variant.bound)
      << ".</p>\n<ul>";
    for (const auto& f : bd.findings) o << "<li>" << html_escape(f) << "</li>";
    o << "</ul>\n<table><tr><th>Phase</th><th>Baseline ms</th><th>share</th><th>Variant "
         "ms</th><th>share</th></tr>\n";
    for (const auto& p : bd.phases)
      o << "<tr>" << td(html_escape(p.phase)) << td(text::fixed(p.baseline_ms, 2), true)
        << td(text::percent(p.baseline_share), true) << td(text::fixed(p.variant_ms, 2), true)
        << td(text::percent(p.variant_share), true) << "</tr>\n";
    o << "</table>\n<table><tr><th>Operator</th><th>Baseline ms/step</th><th>Variant "
         "ms/step</th><th>Change</th><th>Calls</th></tr>\n";
    for (const auto& op : bd.ops)
      o << "<tr>" << td(html_code(op.name)) << td(text::fixed(op.baseline_ms, 3), true)
        << td(text::fixed(op.variant_ms, 3), true)
        << td(text::signed_fixed(op.variant_ms - op.baseline_ms, 3, " ms"), true)
        << td(text::fixed(op.baseline_calls, 0) + " / " + text::fixed(op.variant_calls, 0), true)
        << "</tr>\n";
    o << "</table></section>\n";
  }
  o << "<section><h2>Checks</h2>\n<table><tr><th></th><th>Check</th><th>Detail</th></tr>\n";
  for (const auto& c : r.checks) {
    const bool unsure = c.verdict == compare::Verdict::Inconclusive;
    o << "<tr>"
      << td(unsure     ? std::string(c.passed ? "<span class=\"muted\">?</span>"
                                              : "<span class=\"no\">?</span>")
            : c.passed ? "<span class=\"yes\">✔</span>"
                       : "<span class=\"no\">✘</span>")
      << td(html_escape(c.name)) << td(html_escape(c.detail)) << "</tr>\n";
  }
  if (r.checks.empty()) o << "<tr><td colspan=\"3\" class=\"muted\">no checks ran</td></tr>\n";
  o << "</table>\n";
  if (const auto unsure = text::inconclusive_summary(r); !unsure.empty())
    o << "<p class=\"muted\">" << html_escape(unsure) << ".</p>\n";
  o << "</section>\n<section><h2>Policy</h2>\n";
  if (!r.policy_source.empty())
    o << "<p class=\"muted\">from " << html_escape(r.policy_source) << "</p>\n";
  o << "<pre>" << html_escape(r.policy.describe()) << "</pre></section>\n";
  if (r.golden && !r.golden->environment.empty()) {  // golden mode: both environments
    o << "<section><h2>Environments</h2><p class=\"muted\">" << html_escape(r.golden->judged_by)
      << "</p><table>\n<tr><th>Key</th><th>Golden (export)</th><th>This run</th><th></th></tr>\n";
    for (const auto& [k, v] : r.golden->environment) {
      auto it = r.env.find(k);
      const std::string here = it == r.env.end() ? "unknown" : it->second;
      o << "<tr>" << td(html_escape(k)) << td(html_code(v)) << td(html_code(here))
        << td(v == here ? "" : "differs") << "</tr>\n";
    }
    o << "</table></section>\n";
  }
  if (!r.env.empty()) {
    o << "<section><details><summary>Environment</summary><table>\n";
    for (const auto& [k, v] : r.env)
      o << "<tr>" << td(html_escape(k)) << td(html_code(v)) << "</tr>\n";
    o << "</table></details></section>\n";
  }
}

}  // namespace

std::string HtmlReporter::render(const compare::CompareResult& r) const {
  std::ostringstream o;
  const std::string verdict = r.verdict == compare::Verdict::Pass ? "PASS" : "FAIL";
  o << html_page_begin("Lockstep " + verdict + ": " + r.variant.name + " vs " + r.baseline.name,
                       kComparisonCss);
  banner(o, r);
  config_diff(o, r);
  alignment(o, r);
  performance(o, r);
  memory_per_rank(o, r);
  checks_and_policy(o, r);
  o << "</main>\n<footer>Lockstep comparison report";
  if (!r.out_dir.empty()) o << " · " << html_escape(r.out_dir);
  o << "</footer>\n" << html_page_end();
  return o.str();
}

}  // namespace lockstep::reports
