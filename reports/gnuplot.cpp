#include "reports/gnuplot.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "harness/util/files.h"
#include "harness/util/format.h"

extern char** environ;

namespace lockstep::reports {
namespace fs = std::filesystem;

namespace {

constexpr auto kTimeout = std::chrono::seconds(30);

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

const std::string kStyle =
    "set border 3 lc rgb '#666666'\nset tics nomirror\nset grid lc rgb '#e6e6e6' lt 1\n"
    "set key top right opaque box lc rgb '#dddddd'\nset datafile missing '?'\n";

}  // namespace

std::string gnuplot_number(double x) {
  return std::isfinite(x) ? util::format_number("%.10g", x) : "?";
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

}  // namespace lockstep::reports
