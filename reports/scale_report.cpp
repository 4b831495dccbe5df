#include "reports/scale_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "harness/util/files.h"
#include "reports/html_page.h"
#include "reports/html_reporter.h"
#include "reports/markdown_reporter.h"
#include "reports/reporter.h"
#include "reports/run_json.h"

namespace lockstep::reports {
namespace {

using nlohmann::json;
using scale::AmdahlFit;
using scale::ScalePoint;
using scale::ScaleResult;
using scale::ScaleSeries;
using text::fixed;

const char* kStrongColor = "#1f77b4";
const char* kWeakColor = "#e8590c";
const char* kFitColor = "#5f3dc4";

std::string pct(double share, int decimals = 1) {
  return std::isfinite(share) ? fixed(100 * share, decimals) + "%" : "n/a";
}
std::string times(double x) {
  return std::isfinite(x) ? fixed(x, 2) + "x" : (x > 0 ? "unbounded" : "n/a");
}

std::string g(double x) {
  if (!std::isfinite(x)) return "?";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

std::string modes_text(const ScaleResult& r) {
  return r.mode == "both" ? "strong and weak" : r.mode;
}

std::string nprocs_text(const ScaleResult& r) {
  std::string s;
  for (int n : r.nprocs) s += (s.empty() ? "" : ",") + std::to_string(n);
  return s;
}

std::string series_caption(const ScaleResult& r, const ScaleSeries& s) {
  if (s.mode == "strong")
    return "strong scaling: global batch " + std::to_string(r.base_batch) + " at every N";
  return "weak scaling: global batch " + std::to_string(r.base_batch) + " x N (" +
         std::to_string(r.base_batch) + " per rank)";
}

// "from 3 rank counts, R^2 0.991, largest residual 2.1%" (empty without a fit).
std::string fit_quality(const AmdahlFit& f) {
  if (!f.ok) return "";
  std::string s = "from " + std::to_string(f.sizes) + " rank counts";
  if (std::isfinite(f.r2)) s += ", R^2 " + fixed(f.r2, 3);
  if (std::isfinite(f.max_rel_residual)) s += ", largest residual " + pct(f.max_rel_residual);
  if (f.poor) s += ", POOR FIT";
  return s;
}

// "P = 0.873 (fitted 1.12, clamped), from ..." or "no fit".
std::string fit_summary(const AmdahlFit& f) {
  if (!f.ok) return "no fit";
  std::string s = "P = " + fixed(f.p, 3);
  if (f.clamped)
    s += " (fitted " +
         (std::isfinite(f.p_raw) ? fixed(f.p_raw, 3) : std::string(f.p_raw > 0 ? "+inf" : "-inf")) +
         ", clamped)";
  return s + ", " + fit_quality(f);
}

std::string prediction_text(const ScaleResult& r, const AmdahlFit& f) {
  if (!f.ok) return "";
  std::string s;
  for (double n : r.predict_at)
    s += (s.empty() ? "" : ", ") + g(n) + " ranks " + times(f.predict(n));
  s += " (vs N=" + g(f.ref_n) + "); ceiling " +
       times(f.max_speedup() / scale::amdahl_speedup(f.p, f.ref_n));
  return s;
}

json fit_json(const ScaleResult& r, const AmdahlFit& f) {
  json j{{"ok", f.ok},
         {"p", num(f.p)},
         {"p_raw", num(f.p_raw)},
         {"clamped", f.clamped},
         {"superlinear", f.superlinear},
         {"slowdown", f.slowdown},
         {"poor", f.poor},
         {"a", num(f.a)},
         {"b", num(f.b)},
         {"r2", num(f.r2)},
         {"max_rel_residual", num(f.max_rel_residual)},
         {"reference_n", f.ref_n},
         {"points", f.points},
         {"sizes", f.sizes},
         {"notes", f.notes},
         {"model",
          "speed-up(N) = 1 / ((1 - P) + P / N); least squares of 1/speed-up = a + b/N, P = b / (a "
          "+ b)"}};
  j["max_speedup_vs_one"] = f.ok && f.p >= 1 ? json("unbounded") : num(f.max_speedup());
  json preds = json::array();
  for (double n : r.predict_at) {
    const double s = f.predict(n);
    preds.push_back({{"n", n},
                     {"speedup", num(s)},
                     {"speedup_vs_one", num(f.predict_vs_one(n))},
                     {"efficiency", num(f.ok ? s / (n / f.ref_n) : NAN)}});
  }
  j["predictions"] = preds;
  return j;
}

json point_json(const ScalePoint& p) {
  json reps = json::array();
  for (double x : p.tokens_per_sec_repeats) reps.push_back(num(x));
  return json{{"n", p.n},
              {"global_batch", p.global_batch},
              {"micro_batch_per_rank", p.micro_batch},
              {"status", p.status},
              {"note", p.note},
              {"shared_with", p.shared_with},
              {"tokens_per_sec", num(p.tokens_per_sec)},
              {"tokens_per_sec_repeats", reps},
              {"speedup", num(p.speedup)},
              {"efficiency", num(p.efficiency)},
              {"comm_share", num(p.comm_share)},
              {"step_ms_p50", num(p.step_ms_p50)},
              {"run_dirs", p.run_dirs}};
}

// ---- console -----------------------------------------------------------------------------------

std::string pad(const std::string& s, size_t w, bool right = true) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}

std::string status_cell(const ScalePoint& p) {
  if (p.status == "skipped") return "skipped";
  if (p.status == "failed") return "FAILED";
  return p.shared_with.empty() ? "" : "= " + p.shared_with;
}

// ---- html --------------------------------------------------------------------------------------

// The scaling report's own rules, on top of the shared page stylesheet (reports/html_page.h).
const char* kCss = R"css(.banner.pass{background:#1864ab}
.big{font-size:22px;font-weight:700}
.skip{color:var(--muted);font-style:italic}span.fail{color:var(--bad);font-weight:600}
figure{max-width:900px}
details summary{cursor:pointer;font-weight:600}
)css";

std::string td(const std::string& html, bool num = false) {
  return num ? "<td class=\"num\">" + html + "</td>" : "<td>" + html + "</td>";
}
std::string th(const std::string& s, bool num = false) {
  return num ? "<th class=\"num\">" + s + "</th>" : "<th>" + s + "</th>";
}

}  // namespace

// ---- console -----------------------------------------------------------------------------------

std::string scale_console(const ScaleResult& r) {
  std::ostringstream o;
  o << "lockstep scale: " << r.name << " (" << r.config << ") - " << modes_text(r)
    << " scaling, N = " << nprocs_text(r) << "; " << r.repeats << " repeat(s), " << r.steps_timed
    << " timed steps per run\n";
  o << "host: " << r.host_cores << " cores, " << r.threads_per_rank
    << " thread(s) per rank, device " << r.device << ", load average " << fixed(r.load_average, 2)
    << "\n";
  for (const auto& s : r.series) {
    o << "\n" << series_caption(r, s) << "\n";
    o << "  " << pad("N", 4) << pad("batch", 7) << pad("per-rank", 10) << pad("tokens/s", 12)
      << pad("speed-up", 10) << pad("efficiency", 12) << pad("comm", 8) << pad("P50 ms", 10)
      << "  \n";
    for (const auto& p : s.points) {
      o << "  " << pad(std::to_string(p.n), 4) << pad(std::to_string(p.global_batch), 7)
        << pad(p.micro_batch ? std::to_string(p.micro_batch) : "-", 10)
        << pad(fixed(p.tokens_per_sec, 1), 12)
        << pad(std::isfinite(p.speedup) ? fixed(p.speedup, 2) + "x" : "n/a", 10)
        << pad(pct(p.efficiency), 12) << pad(pct(p.comm_share), 8)
        << pad(fixed(p.step_ms_p50, 2), 10) << "  " << status_cell(p) << "\n";
    }
    o << "  Amdahl fit (" << s.mode << "): " << fit_summary(s.fit) << "\n";
    if (s.fit.ok) o << "  predicted speed-up: " << prediction_text(r, s.fit) << "\n";
  }
  if (!r.failures.empty()) {
    o << "\nFAILED runs:\n";
    for (const auto& f : r.failures) o << "  x " << f << "\n";
  }
  if (!r.warnings.empty()) {
    o << "\nwarnings:\n";
    for (const auto& w : r.warnings) o << "  ! " << w << "\n";
  }
  if (!r.notes.empty()) {
    o << "\nnotes:\n";
    for (const auto& n : r.notes) o << "  - " << n << "\n";
  }
  o << "\nexit " << r.exit_code << " ("
    << (r.exit_code == 0 ? "all runs succeeded" : "a run failed") << "), "
    << fixed(r.wall_seconds, 1) << " s\n";
  return o.str();
}

// ---- json --------------------------------------------------------------------------------------

nlohmann::json scale_json(const ScaleResult& r) {
  json j;
  j["tool"] = "lockstep scale";
  j["schema_version"] = 1;
  j["config"] = r.config;
  j["name"] = r.name;
  j["mode"] = r.mode;
  j["nprocs"] = r.nprocs;
  j["repeats"] = r.repeats;
  j["steps_timed"] = r.steps_timed;
  j["stop_after"] = r.stop_after;
  j["warmup_steps"] = r.warmup_steps;
  j["profile_window"] = r.profile_window;
  j["base_batch"] = r.base_batch;
  j["device"] = r.device;
  j["threads_per_rank"] = r.threads_per_rank;
  j["host"] = {{"cores", r.host_cores},
               {"load_average", num(r.load_average)},
               {"shares_cores", r.shares_cores}};
  json series = json::array();
  for (const auto& s : r.series) {
    json pts = json::array();
    for (const auto& p : s.points) pts.push_back(point_json(p));
    series.push_back({{"mode", s.mode},
                      {"reference_n", s.ref_n},
                      {"points", pts},
                      {"amdahl", fit_json(r, s.fit)}});
  }
  j["series"] = series;
  if (const auto* h = r.headline()) {
    j["amdahl"] = fit_json(r, h->fit);
    j["amdahl"]["series"] = h->mode;
  } else {
    j["amdahl"] = nullptr;
  }
  j["warnings"] = r.warnings;
  j["notes"] = r.notes;
  j["failures"] = r.failures;
  j["exit_code"] = r.exit_code;
  j["wall_seconds"] = r.wall_seconds;
  j["out_dir"] = r.out_dir;
  j["environment"] = r.env;
  return j;
}

// ---- markdown ----------------------------------------------------------------------------------

std::string scale_markdown(const ScaleResult& r) {
  std::ostringstream o;
  o << "## " << (r.exit_code == 0 ? "📈" : "❌") << " Lockstep scaling: " << markdown_escape(r.name)
    << "\n\n";
  o << markdown_escape(r.config) << " · " << modes_text(r) << " scaling · N = " << nprocs_text(r)
    << " · " << r.repeats << " repeat(s) × " << r.steps_timed << " timed steps · " << r.host_cores
    << " host cores, " << r.threads_per_rank << " thread(s) per rank · exit " << r.exit_code
    << "\n\n";
  if (const auto* h = r.headline(); h && h->fit.ok)
    o << "**Amdahl (" << h->mode << "): " << markdown_escape(fit_summary(h->fit))
      << "** — predicted " << markdown_escape(prediction_text(r, h->fit)) << "\n\n";
  for (const auto& f : r.failures) o << "> ❌ **Run failed:** " << markdown_escape(f) << "\n\n";
  for (const auto& w : r.warnings) o << "> ⚠️ " << markdown_escape(w) << "\n\n";
  for (const auto& s : r.series) {
    o << "### " << markdown_escape(series_caption(r, s)) << "\n\n";
    o << "| N | global batch | per-rank micro-batch | tokens/s | speed-up | efficiency | comm "
         "share | P50 ms | status |\n";
    o << "|--:|--:|--:|--:|--:|--:|--:|--:|---|\n";
    for (const auto& p : s.points) {
      std::string status = p.status == "ok"
                               ? (p.shared_with.empty() ? "ok" : "same run as " + p.shared_with)
                               : p.status + ": " + p.note;
      o << "| " << p.n << " | " << p.global_batch << " | "
        << (p.micro_batch ? std::to_string(p.micro_batch) : "-") << " | "
        << fixed(p.tokens_per_sec, 1) << " | "
        << (std::isfinite(p.speedup) ? fixed(p.speedup, 2) + "×" : "n/a") << " | "
        << pct(p.efficiency) << " | " << pct(p.comm_share) << " | " << fixed(p.step_ms_p50, 2)
        << " | " << markdown_escape(status) << " |\n";
    }
    o << "\nAmdahl fit: " << markdown_escape(fit_summary(s.fit));
    if (s.fit.ok) o << "; predicted " << markdown_escape(prediction_text(r, s.fit));
    o << "\n\n";
  }
  if (!r.notes.empty()) {
    o << "<details><summary>Notes</summary>\n\n";
    for (const auto& n : r.notes) o << "- " << markdown_escape(n) << "\n";
    o << "\n</details>\n";
  }
  return o.str();
}

// ---- plot --------------------------------------------------------------------------------------

Plot scale_plot(const ScaleResult& r) {
  std::map<std::string, std::string> data;
  std::string plot;
  double ymin = 1, ymax = 1, xmin = 1e9, xmax = 1;
  for (double n : r.predict_at) xmax = std::max(xmax, n);
  auto add = [&](const std::string& item) { plot += (plot.empty() ? "plot " : ", ") + item; };
  for (const auto& s : r.series) {
    std::string d;
    for (const auto& p : s.points) {
      if (!std::isfinite(p.speedup) || p.speedup <= 0) continue;
      d += std::to_string(p.n) + " " + g(p.speedup) + "\n";
      ymin = std::min(ymin, p.speedup);
      ymax = std::max(ymax, p.speedup);
      xmin = std::min(xmin, static_cast<double>(p.n));
    }
    if (d.empty()) continue;
    const bool strong = s.mode == "strong";
    data[s.mode + ".dat"] = d;
    add("'" + s.mode + ".dat' using 1:2 with linespoints lw 2 pt " + (strong ? "7" : "5") +
        " ps 1.2 lc rgb '" + (strong ? kStrongColor : kWeakColor) + "'" +
        (strong ? "" : " dt (8,5)") + " title " + gnuplot_quote("measured " + s.mode));
  }
  if (plot.empty()) return {"", "no measured speed-up"};
  for (int n : r.nprocs) xmin = std::min(xmin, static_cast<double>(n));
  const auto* h = r.headline();
  const double ref = h && h->ref_n > 0 ? h->ref_n : xmin;
  ymax = std::max(ymax, xmax / ref);
  std::string s = "set logscale xy 2\nset xlabel 'ranks (N)'\nset ylabel 'speed-up vs N=" + g(ref) +
                  "'\nset key top left reverse Left samplen 2 font ',10'\n";
  s += "set xrange [" + g(xmin / 1.25) + ":" + g(xmax * 1.25) + "]\nset yrange [" +
       g(std::min(0.5, ymin / 1.25)) + ":" + g(ymax * 1.4) +
       "]\nset samples 400\nset format x '%g'\nset format y '%g'\n";
  std::set<double> tics{xmin};
  for (double t = 1; t <= xmax * 1.01; t *= 2) tics.insert(t);
  for (int n : r.nprocs) tics.insert(n);
  std::string tl;
  for (double t : tics)
    if (t >= xmin / 1.25) tl += (tl.empty() ? "" : ", ") + g(t);
  s += "set xtics (" + tl + ")\n";
  add("x / " + g(ref) + " with lines dt 2 lw 1.5 lc rgb '#888888' title 'ideal (linear)'");
  int curve = 0;
  for (const auto& ser : r.series) {
    const auto& f = ser.fit;
    if (!f.ok) continue;
    const std::string fn = "f" + std::to_string(++curve);
    // Amdahl relative to the series' reference: ((1-P) + P/ref) / ((1-P) + P/x).
    s += fn + "(x) = ((1 - " + g(f.p) + ") + " + g(f.p) + " / " + g(f.ref_n) + ") / ((1 - " +
         g(f.p) + ") + " + g(f.p) + " / x)\n";
    const bool main = &ser == h;
    add(fn + "(x) with lines lw " + (main ? "2" : "1.5") + " lc rgb '" +
        (main ? kFitColor : kWeakColor) + "'" + (main ? "" : " dt 3") + " title " +
        gnuplot_quote("Amdahl fit (" + ser.mode + "), P = " + fixed(f.p, 3)));
  }
  if (h && h->fit.ok) {
    std::string d;
    int label = 0;
    for (double n : r.predict_at) {
      const double sp = h->fit.predict(n);
      if (!std::isfinite(sp)) continue;
      d += g(n) + " " + g(sp) + "\n";
      s += "set label " + std::to_string(++label) + " " +
           gnuplot_quote(g(n) + " ranks: " + fixed(sp, 2) + "x") + " at " + g(n) + "," + g(sp) +
           (n >= xmax ? " right offset -1,-1.1" : " left offset 1,-1.1") + " tc rgb '" + kFitColor +
           "'\n";
    }
    if (!d.empty()) {
      data["predicted.dat"] = d;
      add("'predicted.dat' using 1:2 with points pt 9 ps 1.6 lc rgb '" + std::string(kFitColor) +
          "' title 'predicted (Amdahl)'");
    }
  }
  return run_gnuplot(s + plot, data, "scale", "speed-up vs ranks");
}

// ---- html --------------------------------------------------------------------------------------

std::string scale_html(const ScaleResult& r) {
  std::ostringstream o;
  const bool ok = r.exit_code == 0;
  o << html_page_begin("Lockstep scaling: " + r.name, kCss);
  o << "<div class=\"banner " << (ok ? "pass" : "fail") << "\"><h1>Scaling: " << html_escape(r.name)
    << (ok ? "" : " — a run failed") << "</h1><p><code style=\"color:#fff;background:transparent\">"
    << html_escape(r.config) << "</code> · " << html_escape(modes_text(r))
    << " scaling · N = " << html_escape(nprocs_text(r)) << " · " << r.repeats << " repeat(s) × "
    << r.steps_timed << " timed steps · exit " << r.exit_code << "</p></div>\n<main>\n";
  for (const auto& f : r.failures)
    o << "<div class=\"notice bad\"><b>Run failed:</b> " << html_escape(f) << "</div>\n";
  for (const auto& w : r.warnings) o << "<div class=\"notice\">⚠ " << html_escape(w) << "</div>\n";

  if (const auto* h = r.headline()) {
    const auto& f = h->fit;
    o << "<section><h2>Amdahl's law (" << html_escape(h->mode) << " scaling)</h2>\n";
    if (f.ok) {
      o << "<p><span class=\"big\">P = " << fixed(f.p, 3)
        << "</span> <span class=\"muted\">parallel fraction";
      if (f.clamped)
        o << " (fitted "
          << html_escape(std::isfinite(f.p_raw) ? fixed(f.p_raw, 3)
                                                : std::string(f.p_raw > 0 ? "+inf" : "-inf"))
          << ", clamped)";
      o << " · " << html_escape(fit_quality(f)) << "</span></p>\n";
      o << "<p class=\"muted\">speed-up(N) = 1 / ((1 − P) + P / N); least squares of 1/speed-up = "
           "a + b/N on the measured "
           "points (a = "
        << fixed(f.a, 4) << ", b = " << fixed(f.b, 4)
        << "), P = b / (a + b). Speed-ups are relative to N = " << g(f.ref_n) << ".</p>\n";
      o << "<table><tr>" << th("ranks") << th("predicted speed-up", true) << th("vs 1 rank", true)
        << th("efficiency", true) << "</tr>\n";
      for (double n : r.predict_at) {
        const double sp = f.predict(n);
        o << "<tr>" << td(g(n)) << td(times(sp), true) << td(times(f.predict_vs_one(n)), true)
          << td(pct(sp / (n / f.ref_n)), true) << "</tr>\n";
      }
      o << "<tr>" << td("∞ (ceiling)")
        << td(times(f.max_speedup() / scale::amdahl_speedup(f.p, f.ref_n)), true)
        << td(times(f.max_speedup()), true) << td("0%", true) << "</tr>\n</table>\n";
    } else {
      o << "<p>No fit.</p>\n";
    }
    if (!f.notes.empty()) {
      o << "<ul class=\"muted\">";
      for (const auto& n : f.notes) o << "<li>" << html_escape(n) << "</li>";
      o << "</ul>\n";
    }
    o << "</section>\n";
  }

  Plot p = scale_plot(r);
  o << "<section><h2>Speed-up vs ranks</h2>\n<figure><figcaption>measured strong and weak scaling, "
       "the Amdahl fit, the ideal line "
       "and the predictions at "
    << html_escape([&] {
         std::string s;
         for (double n : r.predict_at) s += (s.empty() ? "" : " and ") + g(n);
         return s;
       }())
    << " ranks (log-log)</figcaption>"
    << (p.ok() ? p.svg
               : "<p class=\"unavailable\">plot unavailable: " + html_escape(p.error) + "</p>")
    << "</figure></section>\n";

  for (const auto& s : r.series) {
    o << "<section><h2>" << html_escape(series_caption(r, s)) << "</h2>\n<table><tr>"
      << th("N", true) << th("global batch", true) << th("per-rank micro-batch", true)
      << th("tokens/s", true) << th("speed-up", true) << th("efficiency", true)
      << th("comm share", true) << th("P50 ms", true) << th("status") << "</tr>\n";
    for (const auto& pt : s.points) {
      std::string status = pt.status == "ok"
                               ? (pt.shared_with.empty() ? "ok" : "same run as " + pt.shared_with)
                               : "<span class=\"" +
                                     std::string(pt.status == "failed" ? "fail" : "skip") + "\">" +
                                     html_escape(pt.status + ": " + pt.note) + "</span>";
      std::string reps;
      for (double x : pt.tokens_per_sec_repeats) reps += (reps.empty() ? "" : ", ") + fixed(x, 1);
      o << "<tr>" << td(std::to_string(pt.n), true) << td(std::to_string(pt.global_batch), true)
        << td(pt.micro_batch ? std::to_string(pt.micro_batch) : "-", true)
        << td("<span title=\"repeats: " + html_escape(reps) + "\">" + fixed(pt.tokens_per_sec, 1) +
                  "</span>",
              true)
        << td(std::isfinite(pt.speedup) ? fixed(pt.speedup, 2) + "×" : "n/a", true)
        << td(pct(pt.efficiency), true) << td(pct(pt.comm_share), true)
        << td(fixed(pt.step_ms_p50, 2), true) << td(status) << "</tr>\n";
    }
    o << "</table>\n<p class=\"muted\">Amdahl fit: " << html_escape(fit_summary(s.fit));
    if (s.fit.ok) o << " · predicted " << html_escape(prediction_text(r, s.fit));
    o << "</p></section>\n";
  }

  if (!r.notes.empty()) {
    o << "<section><h2>Notes</h2><ul>";
    for (const auto& n : r.notes) o << "<li>" << html_escape(n) << "</li>";
    o << "</ul></section>\n";
  }
  o << "<section><details><summary>Host and environment</summary><table>\n";
  o << "<tr>" << td("host cores") << td(std::to_string(r.host_cores)) << "</tr>";
  o << "<tr>" << td("threads per rank") << td(std::to_string(r.threads_per_rank)) << "</tr>";
  o << "<tr>" << td("device") << td(html_escape(r.device)) << "</tr>";
  o << "<tr>" << td("1-minute load average at start") << td(fixed(r.load_average, 2)) << "</tr>";
  o << "<tr>" << td("steps per run")
    << td(std::to_string(r.stop_after) + " (" + std::to_string(r.warmup_steps) + " warmup + " +
          std::to_string(r.profile_window) + " profiled + " + std::to_string(r.steps_timed) +
          " timed)")
    << "</tr>\n";
  for (const auto& [k, v] : r.env)
    o << "<tr>" << td(html_escape(k)) << td("<code>" + html_escape(v) + "</code>") << "</tr>\n";
  o << "</table></details></section>\n</main>\n<footer>Lockstep scaling report";
  if (!r.out_dir.empty()) o << " · " << html_escape(r.out_dir);
  o << " · " << fixed(r.wall_seconds, 1) << " s</footer>\n" << html_page_end();
  return o.str();
}

std::vector<std::filesystem::path> write_scale_reports(const ScaleResult& r,
                                                       const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::filesystem::path> paths{dir / "report.json", dir / "report.md",
                                           dir / "report.html"};
  util::write_atomic(paths[0], scale_json(r).dump(2) + "\n");
  util::write_atomic(paths[1], scale_markdown(r));
  util::write_atomic(paths[2], scale_html(r));
  return paths;
}

}  // namespace lockstep::reports
