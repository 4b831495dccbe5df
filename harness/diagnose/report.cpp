#include "harness/diagnose/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "harness/util/files.h"
#include "harness/util/format.h"
#include "reports/html_page.h"
#include "reports/html_reporter.h"
#include "reports/plots.h"
#include "reports/run_json.h"

namespace lockstep::diagnose {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string fmt(const char* f, double x) {
  return util::format_number(f, x);
}
std::string num(double x) {
  return fmt("%.10g", x);
}  // gnuplot data ('?' for missing is added by callers)

std::string detection_text(const Detection& d, int64_t world) {
  const std::string rank = world > 1 ? " on rank " + std::to_string(d.rank) : "";
  if (d.kind == "nonfinite") return "step " + std::to_string(d.step) + ": the loss is non-finite";
  if (d.kind == "loss")
    return "step " + std::to_string(d.step) + ": loss " + fmt("%.4f", d.value) + " vs trend " +
           fmt("%.4f", d.median) + " (" + fmt("%+.0f%%", 100 * (d.value / d.median - 1)) +
           ", robust z " + fmt("%.1f", d.z) + ")";
  if (d.kind == "grad_norm")
    return "step " + std::to_string(d.step) + ": grad norm " + fmt("%.3g", d.value) +
           " vs median " + fmt("%.3g", d.median) + " (" + fmt("%.0fx", d.value / d.median) + ")";
  return "step " + std::to_string(d.step) + rank + ": step time " + fmt("%.1f", d.value) +
         " ms vs median " + fmt("%.1f", d.median) + " ms (" + fmt("%.1fx", d.value / d.median) +
         ")";
}

// The detections of an event in a few lines (at most 3 per kind, then a count).
std::vector<std::string> detection_lines(const Event& e, int64_t world) {
  std::vector<std::string> out;
  std::map<std::string, int> per_kind;
  for (const auto& d : e.detections) {
    int n = ++per_kind[d.kind];
    if (n <= 3) out.push_back(detection_text(d, world));
  }
  for (const auto& [kind, n] : per_kind)
    if (n > 3) out.push_back("+" + std::to_string(n - 3) + " more " + kind + " detection(s)");
  return out;
}

std::string header_line(const DiagnoseReport& r) {
  const auto& m = r.run.main();
  std::string s = r.run_dir.empty() ? "run" : r.run_dir;
  s += " (" + (r.name.empty() ? std::string() : r.name + ", ") +
       std::to_string(m.empty() ? 0 : m.back().step) + " steps, " + std::to_string(r.run.world()) +
       (r.run.world() == 1 ? " rank" : " ranks") +
       (r.status.empty() ? "" : ", status " + r.status) + ")";
  return s;
}

// "3 events", or for a run too short to judge a loss: "too short to judge" (not "0 events").
std::string events_text(const DiagnoseReport& r) {
  const size_t n = r.diagnoses.size();
  if (n == 0 && loss_coverage(r.run, r.thresholds).none()) return "too short to judge";
  return std::to_string(n) + (n == 1 ? " event" : " events");
}

std::string no_event_text(const DiagnoseReport& r) {
  const auto& t = r.thresholds;
  if (std::string s = too_short_text(r.run, t); !s.empty()) return s;
  return "no events: no non-finite loss, no loss jump (robust z " + fmt("%g", t.loss_z) + ", +" +
         fmt("%g", 100 * t.loss_min_rise) + "%) or lasting rise (+" +
         fmt("%g", 100 * t.loss_sustained_rise) + "% for two steps) above its local trend from step " +
         std::to_string(loss_coverage(r.run, t).first_judged) + " on, no grad norm " +
         fmt("%g", t.grad_ratio) + "x its median and no step " + fmt("%g", t.time_ratio) +
         "x slower than usual";
}

// ---- plots --------------------------------------------------------------------------------------

reports::Plot loss_plot(const DiagnoseReport& r) {
  std::string d, marks;
  bool any = false;
  for (const auto& rec : r.run.main()) {
    any = any || std::isfinite(rec.loss);
    d += std::to_string(rec.step) + " " + (std::isfinite(rec.loss) ? num(rec.loss) : "?") + "\n";
  }
  if (!any) return {"", "no finite loss values recorded"};
  // The key goes above the plot (never over the curve); labels sit beside their marker line, on its
  // left when the event is in the right 30% of the run.
  std::string s =
      "set xlabel 'step'\nset ylabel 'loss'\nset offsets 0, 0, graph 0.12, 0\nset key outside top "
      "center horizontal\n";
  const int64_t last = r.run.main().empty() ? 1 : std::max<int64_t>(1, r.run.main().back().step);
  int label = 0;
  for (const auto& dg : r.diagnoses) {
    const int64_t k = dg.event.step;
    const std::string top = dg.causes.empty() ? "?" : dg.causes.front().cause;
    s += "set arrow from " + std::to_string(k) + ", graph 0 to " + std::to_string(k) +
         ", graph 1 nohead dt 2 lw 1.5 lc rgb '#c92a2a'\n";
    ++label;
    s += "set label " + std::to_string(label) + " " +
         reports::gnuplot_quote("step " + std::to_string(k) + ": " + top) + " at " +
         std::to_string(k) + ", graph " + fmt("%.2f", 0.96 - 0.07 * ((label - 1) % 4)) +
         (static_cast<double>(k) > 0.7 * static_cast<double>(last) ? " right offset -0.5,0"
                                                                   : " left offset 0.5,0") +
         " tc rgb '#c92a2a'\n";
    const StepRecord* rec = r.run.at(0, dg.event.loss_step());
    if (rec && std::isfinite(rec->loss))
      marks += std::to_string(rec->step) + " " + num(rec->loss) + "\n";
  }
  std::string plot =
      "plot 'loss.dat' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'loss (rank 0, global "
      "batch)'";
  std::map<std::string, std::string> data{{"loss.dat", d}};
  if (!marks.empty()) {
    data["marks.dat"] = marks;
    plot += ", 'marks.dat' using 1:2 with points pt 7 ps 1.2 lc rgb '#c92a2a' title 'event'";
  }
  return reports::run_gnuplot(s + plot, data, "diagloss", "loss with events marked");
}

reports::Plot time_plot(const DiagnoseReport& r) {
  std::map<std::string, std::string> data;
  std::string plot;
  const char* colors[] = {"#1f77b4", "#e8590c", "#2b8a3e", "#5f3dc4", "#868e96", "#d6336c"};
  for (size_t rank = 0; rank < r.run.ranks.size(); ++rank) {
    std::string d;
    for (const auto& rec : r.run.ranks[rank])
      if (rec.timed && std::isfinite(rec.step_ms))
        d += std::to_string(rec.step) + " " + num(rec.step_ms) + "\n";
    if (d.empty()) continue;
    const std::string file = "time" + std::to_string(rank) + ".dat";
    data[file] = d;
    plot += std::string(plot.empty() ? "plot " : ", ") + "'" + file +
            "' using 1:2 with lines lw 1.5 lc rgb '" + colors[rank % 6] + "' title " +
            reports::gnuplot_quote("rank " + std::to_string(rank));
  }
  if (plot.empty()) return {"", "no timed steps recorded"};
  std::string s = "set xlabel 'step'\nset ylabel 'step time (ms)'\nset logscale y\n";
  for (const auto& dg : r.diagnoses)
    s += "set arrow from " + std::to_string(dg.event.step) + ", graph 0 to " +
         std::to_string(dg.event.step) + ", graph 1 nohead dt 2 lw 1.5 lc rgb '#c92a2a'\n";
  return reports::run_gnuplot(s + plot, data, "diagtime", "step time per rank with events marked");
}

// The diagnosis page's own rules, on top of the shared page stylesheet (reports/html_page.h).
const char* kCss = R"css(.banner.ok{background:var(--ok)}.banner.bad{background:var(--bad)}
.banner h1{font-size:24px;letter-spacing:normal}
th.num{text-align:left}
td.num{white-space:nowrap}
tr.top td{background:#fff5f5;font-weight:600}
.bar{display:inline-block;height:8px;background:var(--bad);border-radius:4px;vertical-align:middle;margin-right:6px}
ul.det{margin:4px 0 8px;padding-left:20px}
)css";

}  // namespace

DiagnoseReport diagnose_records(RunRecords run, const SpikeThresholds& t) {
  DiagnoseReport r;
  r.thresholds = t;
  r.run = std::move(run);
  r.diagnoses = diagnose(r.run, t);
  return r;
}

DiagnoseReport diagnose_run(const fs::path& run_dir, const SpikeThresholds& t) {
  DiagnoseReport r = diagnose_records(read_run(run_dir), t);
  r.run_dir = run_dir.string();
  if (fs::exists(run_dir / "summary.json")) {
    try {
      auto s = reports::read_summary(run_dir / "summary.json");
      r.name = s.name;
      r.status = s.status;
    } catch (const std::exception&) {
      // A torn summary (a crashed run) still leaves metrics to diagnose.
    }
  }
  return r;
}

json to_json(const DiagnoseReport& r) {
  json spikes = json::array();
  for (const auto& d : r.diagnoses) {
    json causes = json::array();
    for (const auto& c : d.causes)
      causes.push_back({{"cause", c.cause}, {"score", c.score}, {"evidence", c.evidence}});
    json dets = json::array();
    for (const auto& x : d.event.detections)
      dets.push_back({{"kind", x.kind},
                      {"step", x.step},
                      {"rank", x.rank},
                      {"value", reports::num(x.value)},
                      {"median", reports::num(x.median)},
                      {"z", std::isinf(x.z) ? json(x.z > 0 ? "inf" : "-inf") : reports::num(x.z)}});
    spikes.push_back({{"step", d.event.step},
                      {"causes", causes},
                      {"last_step", d.event.last_step},
                      {"kind", d.event.kinds()},
                      {"explained", d.explained()},
                      {"detections", dets}});
  }
  const auto& m = r.run.main();
  const auto& t = r.thresholds;
  return json{{"spikes", spikes},
              {"run", r.run_dir},
              {"name", r.name},
              {"status", r.status},
              {"steps", m.empty() ? 0 : m.back().step},
              {"ranks", r.run.world()},
              {"loss_judged_from", loss_coverage(r.run, t).first_judged},  // 0: none
              {"too_short", too_short_text(r.run, t)},                   // "": judged
              {"thresholds",
               {{"loss_window", t.loss_window},
                {"loss_min_history", t.loss_min_history},
                {"loss_noise_window", t.loss_noise_window},
                {"loss_sustained_z", t.loss_sustained_z},
                {"loss_sustained_rise", t.loss_sustained_rise},
                {"loss_z", t.loss_z},
                {"loss_min_rise", t.loss_min_rise},
                {"time_window", t.time_window},
                {"time_z", t.time_z},
                {"time_ratio", t.time_ratio},
                {"grad_window", t.grad_window},
                {"grad_ratio", t.grad_ratio},
                {"grad_z", t.grad_z},
                {"merge_gap", t.merge_gap}}}};
}

std::string render_text(const DiagnoseReport& r) {
  std::ostringstream o;
  o << "lockstep diagnose: " << header_line(r) << ": " << events_text(r) << "\n";
  if (r.diagnoses.empty()) o << "  " << no_event_text(r) << "\n";
  for (const auto& d : r.diagnoses) {
    o << "\nstep " << d.event.step;
    if (d.event.last_step != d.event.step) o << "-" << d.event.last_step;
    o << ": " << d.event.kinds()
      << (d.explained() ? "" : " (unexplained: no cause scores 0.2 or more)") << "\n";
    for (const auto& l : detection_lines(d.event, r.run.world())) o << "    " << l << "\n";
    int i = 0;
    for (const auto& c : d.causes) {
      char head[48];
      std::snprintf(head, sizeof head, "  %d. %-9s %5.3f  ", ++i, c.cause.c_str(), c.score);
      o << head << c.evidence << "\n";
    }
  }
  return o.str();
}

std::string render_markdown(const DiagnoseReport& r) {
  std::ostringstream o;
  o << "# Loss-spike diagnosis\n\n"
    << header_line(r) << ": **" << events_text(r) << "**\n";
  if (r.diagnoses.empty()) o << "\n" << no_event_text(r) << "\n";
  auto cell = [](std::string s) {
    for (size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
    return s;
  };
  for (const auto& d : r.diagnoses) {
    o << "\n## Step " << d.event.step << ": " << d.event.kinds() << "\n\n";
    for (const auto& l : detection_lines(d.event, r.run.world())) o << "- " << l << "\n";
    o << "\n| # | Cause | Score | Evidence |\n|---|---|---:|---|\n";
    int i = 0;
    for (const auto& c : d.causes)
      o << "| " << ++i << " | " << c.cause << " | " << fmt("%.3f", c.score) << " | "
        << cell(c.evidence) << " |\n";
  }
  return o.str();
}

std::string render_html(const DiagnoseReport& r) {
  using reports::figure;
  using reports::html_escape;
  std::ostringstream o;
  const bool events = !r.diagnoses.empty();
  o << reports::html_page_begin("Lockstep diagnosis: " + (r.name.empty() ? r.run_dir : r.name),
                                kCss)
    << "<header class=\"banner " << (events ? "bad" : "ok") << "\"><h1>"
    << (events || loss_coverage(r.run, r.thresholds).none() ? events_text(r)
                                                             : std::string("No events"))
    << "</h1><p>" << html_escape(header_line(r)) << "</p></header>\n<main>\n";
  o << "<section><h2>Loss and step time</h2>\n";
  if (!events) o << "<p class=\"muted\">" << html_escape(no_event_text(r)) << ".</p>\n";
  o << "<div class=\"plots\">" << figure("Loss vs step (events marked)", loss_plot(r))
    << figure("Step time per rank (timed steps, log scale)", time_plot(r)) << "</div></section>\n";
  for (const auto& d : r.diagnoses) {
    o << "<section id=\"step-" << d.event.step << "\"><h2>Step " << d.event.step;
    if (d.event.last_step != d.event.step) o << "–" << d.event.last_step;
    o << ": " << html_escape(d.event.kinds()) << "</h2>\n";
    if (!d.explained()) o << "<p class=\"muted\">Unexplained: no cause scores 0.2 or more.</p>\n";
    o << "<ul class=\"det\">";
    for (const auto& l : detection_lines(d.event, r.run.world()))
      o << "<li>" << html_escape(l) << "</li>";
    o << "</ul>\n<table><tr><th>#</th><th>Cause</th><th "
         "class=\"num\">Score</th><th>Evidence</th></tr>\n";
    int i = 0;
    for (const auto& c : d.causes) {
      const bool top = i++ == 0;
      o << "<tr" << (top ? " class=\"top\"" : "") << "><td>" << i << "</td><td>"
        << html_escape(c.cause) << "</td><td class=\"num\">"
        << "<span class=\"bar\" style=\"width:" << static_cast<int>(std::lround(c.score * 60))
        << "px\"></span>" << fmt("%.3f", c.score) << "</td><td>" << html_escape(c.evidence)
        << "</td></tr>\n";
    }
    o << "</table></section>\n";
  }
  o << "<section><details><summary>How causes are scored</summary><p class=\"muted\">Causes are "
       "checked in the standard order "
       "data → learning rate → gradient explosion → numerics → hardware → distributed sync; each "
       "gets a score in [0, 1] from the "
       "signals the run logged around the event, ties keep that order. \"hardware\" is a guess: "
       "the run logs no hardware counters. "
       "Thresholds and formulas: harness/diagnose/spikes.h and causes.h.</p></details></section>\n";
  o << "</main>\n<footer>Lockstep diagnosis · " << html_escape(r.run_dir) << "</footer>\n"
    << reports::html_page_end();
  return o.str();
}

std::vector<fs::path> write_diagnosis(const DiagnoseReport& r, const fs::path& dir) {
  fs::create_directories(dir);
  std::vector<fs::path> out{dir / "diagnosis.json", dir / "diagnosis.md", dir / "diagnosis.html"};
  util::write_atomic(out[0], to_json(r).dump(2) + "\n");
  util::write_atomic(out[1], render_markdown(r));
  util::write_atomic(out[2], render_html(r));
  return out;
}

}  // namespace lockstep::diagnose
