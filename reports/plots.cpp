#include "reports/plots.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "harness/util/files.h"
#include "reports/html_reporter.h"

extern char** environ;

namespace lockstep::reports {
namespace fs = std::filesystem;

namespace {

constexpr auto kTimeout = std::chrono::seconds(30);
const char* kBaselineColor = "#1f77b4";
const char* kVariantColor = "#e8590c";

// A temp folder removed with everything in it when the object goes.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "lockstep-plot-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw std::runtime_error("cannot create a temp folder: " + std::string(std::strerror(errno)));
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The first n lines of s on one line, joined by "; ".
std::string first_lines(const std::string& s, size_t n) {
  std::string out;
  size_t lines = 0;
  for (char c : s) {
    if (c == '\n') {
      if (++lines == n) break;
      out += "; ";
    } else {
      out += c;
    }
  }
  while (!out.empty() && (out.back() == ';' || out.back() == ' ')) out.pop_back();
  return out;
}

// Runs argv with stdin from /dev/null and stdout+stderr into `log`; returns "" or why it failed.
std::string run_process(const std::vector<std::string>& argv, const fs::path& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return argv[0] + ": cannot run: " + std::strerror(rc);
  auto deadline = std::chrono::steady_clock::now() + kTimeout;
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return argv[0] + ": waitpid failed: " + std::strerror(errno);
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return argv[0] + ": timed out";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  std::string output;
  try {
    output = first_lines(util::read_file(log), 6);
  } catch (const std::exception&) {
  }
  std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                      : "signal " + std::to_string(WTERMSIG(status));
  // posix_spawnp reports a missing program as exit 127 from the child on some libcs.
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && output.empty())
    return argv[0] + ": not found";
  return argv[0] + " failed (" + how + ")" + (output.empty() ? "" : ": " + output);
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

std::string xml_text(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

// gnuplot gives a curve's key sample and its data the same id ("gnuplot_plot_1"); renames repeats.
void dedupe_ids(std::string& svg) {
  std::set<std::string> seen;
  for (size_t at = svg.find(" id="); at != std::string::npos; at = svg.find(" id=", at + 1)) {
    size_t open = at + 4;
    if (open >= svg.size() || (svg[open] != '"' && svg[open] != '\'')) continue;
    size_t close = svg.find(svg[open], open + 1);
    if (close == std::string::npos) return;
    std::string value = svg.substr(open + 1, close - open - 1);
    for (int n = 2; !seen.insert(value).second; ++n)
      value = svg.substr(open + 1, close - open - 1) + "-" + std::to_string(n);
    svg.replace(open + 1, close - open - 1, value);
  }
}

// Drops gnuplot's per-curve <title>gnuplot_plot_N</title> tooltips.
void drop_curve_titles(std::string& svg) {
  for (size_t at = svg.find("<title>gnuplot_plot_"); at != std::string::npos;
       at = svg.find("<title>gnuplot_plot_", at)) {
    size_t end = svg.find("</title>", at);
    if (end == std::string::npos) return;
    svg.erase(at, end + 8 - at);
  }
}

// gnuplot's SVG as an element to inline: no prolog/DOCTYPE, ids unique on the page, a meaningful
// <title>.
std::string inline_svg(std::string svg, const std::string& id, const std::string& title) {
  size_t start = svg.find("<svg");
  if (start == std::string::npos) return "";
  svg.erase(0, start);
  for (const char* q : {"'", "\""}) {
    replace_all(svg, std::string(" id=") + q, std::string(" id=") + q + id + "-");
    replace_all(svg, std::string("href=") + q + "#", std::string("href=") + q + "#" + id + "-");
  }
  replace_all(svg, "url(#", "url(#" + id + "-");
  dedupe_ids(svg);
  drop_curve_titles(svg);
  replace_all(svg, "<title>Gnuplot</title>", "<title>" + xml_text(title) + "</title>");
  svg.replace(0, 4, "<svg role=\"img\" class=\"plot\"");
  return svg;
}

std::string value(double x) {
  if (!std::isfinite(x)) return "?";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

std::string arm_title(const compare::ArmResult& a, const std::string& fallback) {
  return gnuplot_quote(a.name.empty() || a.name == fallback ? fallback
                                                            : fallback + " (" + a.name + ")");
}

const std::string kStyle =
    "set border 3 lc rgb '#666666'\nset tics nomirror\nset grid lc rgb '#e6e6e6' lt 1\n"
    "set key top right opaque box lc rgb '#dddddd'\nset datafile missing '?'\n";

bool any_finite(const std::vector<double>& xs) {
  return std::any_of(xs.begin(), xs.end(), [](double x) { return std::isfinite(x); });
}

}  // namespace

std::string figure(const std::string& caption, const Plot& p) {
  std::string body =
      p.ok() ? p.svg
             : "<p class=\"unavailable\">plot unavailable: " + html_escape(p.error) + "</p>";
  return "<figure><figcaption>" + html_escape(caption) + "</figcaption>" + body + "</figure>\n";
}

std::string gnuplot_binary() {
  const char* env = std::getenv("LOCKSTEP_GNUPLOT");
  return env && *env ? env : "gnuplot";
}

std::string gnuplot_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "''";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out + "'";
}

Plot run_gnuplot(const std::string& body, const std::map<std::string, std::string>& data,
                 const std::string& id, const std::string& title) {
  try {
    TempDir dir;
    for (const auto& [name, content] : data) util::write_atomic(dir.path / name, content);
    std::string script =
        "cd " + gnuplot_quote(dir.path.string()) +
        "\nset terminal svg size 640,340 dynamic noenhanced font 'sans,12' background rgb 'white'\n"
        "set output 'plot.svg'\n" +
        kStyle + body + "\nunset output\n";
    util::write_atomic(dir.path / "plot.gp", script);
    std::string err =
        run_process({gnuplot_binary(), (dir.path / "plot.gp").string()}, dir.path / "gnuplot.log");
    if (!err.empty()) return {"", err};
    if (!fs::exists(dir.path / "plot.svg")) return {"", "gnuplot wrote no SVG"};
    std::string svg = inline_svg(util::read_file(dir.path / "plot.svg"), id, title);
    if (svg.empty() || svg.find("</svg>") == std::string::npos)
      return {"", "gnuplot wrote an incomplete SVG"};
    return {svg, ""};
  } catch (const std::exception& e) {
    return {"", e.what()};
  }
}

Plot loss_curves_plot(const compare::CompareResult& r) {
  const auto& b = r.baseline.loss_curve;
  const auto& v = r.variant.loss_curve;
  if (!any_finite(b) && !any_finite(v)) return {"", "no finite loss values recorded"};
  std::string d;
  for (size_t i = 0; i < std::max(b.size(), v.size()); ++i)
    d += std::to_string(i + 1) + " " + (i < b.size() ? value(b[i]) : "?") + " " +
         (i < v.size() ? value(v[i]) : "?") + "\n";
  std::string s = "set xlabel 'step'\nset ylabel 'loss'\n";
  if (r.alignment.check_step > 0)
    s += "set arrow from " + std::to_string(r.alignment.check_step) + ", graph 0 to " +
         std::to_string(r.alignment.check_step) + ", graph 1 nohead dt 3 lc rgb '#888888'\n";
  s += std::string("plot 'loss.dat' using 1:2 with lines lw 2 lc rgb '") + kBaselineColor +
       "' title " + arm_title(r.baseline, "baseline") +
       ", 'loss.dat' using 1:3 with lines lw 2 dt (8,5) lc rgb '" + kVariantColor + "' title " +
       arm_title(r.variant, "variant");
  return run_gnuplot(s, {{"loss.dat", d}}, "loss", "loss curves");
}

Plot loss_difference_plot(const compare::CompareResult& r) {
  const auto& b = r.baseline.loss_curve;
  const auto& v = r.variant.loss_curve;
  std::string d;
  bool any = false;
  for (size_t i = 0; i < std::min(b.size(), v.size()); ++i) {
    double diff = v[i] - b[i];
    any = any || std::isfinite(diff);
    d += std::to_string(i + 1) + " " + value(diff) + "\n";
  }
  if (!any) return {"", "no step with both losses finite"};
  const auto& a = r.alignment;
  const bool band = a.band.has_value();
  double allowed = band ? a.band->half_width : a.tolerance;
  std::string s =
      "set xlabel 'step'\nset ylabel 'loss(variant) - loss(baseline)'\nset format y '%g'\n"
      "set offsets 0, 0, graph 0.35, graph 0.08\n";
  std::string plot =
      "plot 'diff.dat' using 1:2 with lines lw 2 lc rgb '#5f3dc4' title 'difference'";
  if (std::isfinite(allowed) && allowed > 0) {
    plot += ", " + value(allowed) + " with lines dt 2 lw 1.5 lc rgb '#2b8a3e' title " +
            gnuplot_quote(band ? "+/- seed band half-width" : "+/- tolerance") + ", " +
            value(-allowed) + " with lines dt 2 lw 1.5 lc rgb '#2b8a3e' notitle";
  }
  plot += ", 0 with lines lc rgb '#999999' notitle";
  if (a.check_step > 0)
    s += "set arrow from " + std::to_string(a.check_step) + ", graph 0 to " +
         std::to_string(a.check_step) + ", graph 1 nohead dt 3 lc rgb '#888888'\n";
  return run_gnuplot(s + plot, {{"diff.dat", d}}, "lossdiff", "loss difference");
}

Plot latency_plot(const compare::CompareResult& r) {
  std::map<std::string, std::string> data;
  std::string s =
      "set xlabel 'step latency (ms)'\nset ylabel 'fraction of steps'\nset yrange [0:1.08]\nset "
      "key bottom right\n";
  std::string plot;
  int label = 0;
  for (const auto* arm : {&r.baseline, &r.variant}) {
    const bool is_base = arm == &r.baseline;
    std::vector<double> pooled;
    for (const auto& rep : arm->step_ms_repeats)
      for (double x : rep)
        if (std::isfinite(x)) pooled.push_back(x);
    if (pooled.empty()) continue;
    std::sort(pooled.begin(), pooled.end());
    std::string d = value(pooled.front()) + " 0\n";
    for (size_t i = 0; i < pooled.size(); ++i)
      d += value(pooled[i]) + " " + value(double(i + 1) / pooled.size()) + "\n";
    const std::string file = is_base ? "ecdf_b.dat" : "ecdf_v.dat";
    const std::string color = is_base ? kBaselineColor : kVariantColor;
    data[file] = d;
    plot += std::string(plot.empty() ? "plot " : ", ") + "'" + file +
            "' using 1:2 with steps lw 2 lc rgb '" + color + "'" + (is_base ? "" : " dt (8,5)") +
            " title " + arm_title(*arm, is_base ? "baseline" : "variant");
    // P50 and P99 as marked points with their values.
    struct Mark {
      const char* name;
      double x, y;
    };
    for (const Mark& m :
         {Mark{"P50", arm->step_ms.p50, 0.5}, Mark{"P99", arm->step_ms.p99, 0.99}}) {
      const std::string q = m.name;
      const double x = m.x, y = m.y;
      if (!std::isfinite(x)) continue;
      s += "set label " + std::to_string(++label) + " " +
           gnuplot_quote(std::string(q) + " " + value(std::round(x * 100) / 100)) + " at " +
           value(x) + "," + value(y) +
           (is_base ? " right offset -0.8,0.6" : " left offset 0.8,-0.6") +
           " point pt 7 ps 0.9 lc rgb '" + color + "' tc rgb '" + color + "'\n";
    }
  }
  if (plot.empty()) return {"", "no timed steps recorded"};
  return run_gnuplot(s + plot, data, "latency", "step latency distribution");
}

Plot throughput_plot(const compare::CompareResult& r) {
  std::map<std::string, std::string> data;
  std::string plot;
  int x = 0;
  for (const auto* arm : {&r.baseline, &r.variant}) {
    ++x;
    const bool is_base = arm == &r.baseline;
    const std::string color = is_base ? kBaselineColor : kVariantColor;
    const std::string tag = is_base ? "b" : "v";
    std::string reps;
    const auto& tps = arm->tokens_per_sec_repeats;
    for (size_t i = 0; i < tps.size(); ++i) {
      double jitter = tps.size() > 1 ? 0.16 * (double(i) / (tps.size() - 1) - 0.5) : 0.0;
      if (std::isfinite(tps[i])) reps += value(x + 0.22 + jitter) + " " + value(tps[i]) + "\n";
    }
    if (std::isfinite(arm->tokens_per_sec)) {
      data["median_" + tag + ".dat"] = std::to_string(x) + " " + value(arm->tokens_per_sec) + " " +
                                       value(arm->tokens_per_sec_ci_lo) + " " +
                                       value(arm->tokens_per_sec_ci_hi) + "\n";
      plot += std::string(plot.empty() ? "plot " : ", ") + "'median_" + tag +
              ".dat' using 1:2:3:4 with yerrorbars pt 7 ps 1.4 lw 2 lc rgb '" + color + "' title " +
              gnuplot_quote(std::string(is_base ? "baseline" : "variant") + " median, 95% CI");
    }
    if (!reps.empty()) {
      data["reps_" + tag + ".dat"] = reps;
      plot += std::string(plot.empty() ? "plot " : ", ") + "'reps_" + tag +
              ".dat' using 1:2 with points pt 6 ps 1 lc rgb '" + color + "' title " +
              gnuplot_quote(std::string(is_base ? "baseline" : "variant") + " repeats");
    }
  }
  if (plot.empty()) return {"", "no throughput measured"};
  std::string s =
      "set ylabel 'tokens/s'\nset xrange [0.5:2.7]\nset xtics (" +
      gnuplot_quote(r.baseline.name.empty() ? "baseline" : "baseline: " + r.baseline.name) +
      " 1, " + gnuplot_quote(r.variant.name.empty() ? "variant" : "variant: " + r.variant.name) +
      " 2)\nset grid noxtics\nset offsets 0, 0, graph 0.15, graph 0.15\nset key outside bottom "
      "center horizontal\n";
  return run_gnuplot(s + plot, data, "throughput", "throughput per arm");
}

}  // namespace lockstep::reports
