#include "harness/compare/golden_file.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "harness/util/exit_codes.h"

namespace lockstep::compare {
namespace {

const std::string kMagic = "# lockstep golden ";

[[noreturn]] void bad(const std::string& path, int line, const std::string& what) {
  throw UsageError(path + ":" + std::to_string(line) + ": " + what);
}

double header_number(const std::string& path, int n, const std::string& key,
                     const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno != 0 || !std::isfinite(x) || x <= 0)
    bad(path, n, key + ": expected a positive number, got \"" + v + "\"");
  return x;
}

int64_t header_count(const std::string& path, int n, const std::string& key, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || x < 1)
    bad(path, n, key + ": expected a positive integer, got \"" + v + "\"");
  return x;
}

bool is_environment_key(const std::string& key) {
  for (const auto& k : golden_environment_keys())
    if (k == key) return true;
  return false;
}

// One "# key = value" line of a format-2 header; a '#' line without " = " is a comment.
void header_line(GoldenFile& g, const std::string& path, int n, const std::string& line) {
  const auto eq = line.find(" = ");
  if (eq == std::string::npos) return;
  std::string key = line.substr(1, eq - 1);
  key.erase(0, key.find_first_not_of(' '));
  const std::string v = line.substr(eq + 3);
  if (is_environment_key(key))
    g.environment[key] = v;
  else if (key == "envelope_runs")
    g.envelope_runs = header_count(path, n, key, v);
  else if (key == "envelope_noise")
    g.envelope_noise = header_number(path, n, key, v);
  else if (key == "envelope_noise_source")
    g.envelope_noise_source = v;
  else if (key == "envelope_window")
    g.envelope_window = header_count(path, n, key, v);
  else if (key == "exact_across_environments" && (v == "tolerance" || v == "envelope"))
    g.exact_across = v == "envelope" ? ExactAcross::Envelope : ExactAcross::Tolerance;
  else if (key == "exact_across_environments")
    bad(path, n, key + ": expected \"tolerance\" or \"envelope\", got \"" + v + "\"");
  else
    bad(path, n, "unknown header key \"" + key + "\" in a format-2 golden file");
}

// One "step loss [E]" line: format 1 reads the first two numbers (as it always did); format 2
// wants exactly two, or three when the header declares an envelope.
void data_line(GoldenFile& g, const std::string& path, int n, const std::string& line) {
  std::istringstream ss(line);
  long long step = 0;
  double loss = 0;
  const auto want = std::to_string(g.curve.size() + 1);
  const bool envelope = g.format == 2 && g.envelope_runs > 0;
  const std::string shape =
      "expected \"" + want + (envelope ? " <loss> <envelope>\"" : " <loss>\"");
  if (!(ss >> step >> loss) || step != static_cast<long long>(g.curve.size()) + 1)
    bad(path, n, shape);
  g.curve.push_back(loss);
  if (g.format == 1) return;
  double e = 0;
  if (envelope && !(ss >> e && std::isfinite(e) && e >= 0)) bad(path, n, shape);
  if (envelope) g.envelope.push_back(e);
  std::string rest;
  if (ss >> rest) bad(path, n, shape);
}

}  // namespace

const std::vector<std::string>& golden_environment_keys() {
  static const std::vector<std::string> keys{"libtorch", "device", "compiler",
                                             "blas",     "threads", "aten_cpu_capability"};
  return keys;
}

const char* to_string(ExactAcross e) {
  return e == ExactAcross::Envelope ? "envelope" : "tolerance";
}

GoldenFile parse_golden(const std::string& text, const std::string& path) {
  GoldenFile g;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (n == 1 && line.rfind(kMagic, 0) == 0) {
      if (line != kMagic + "2")
        bad(path, n, "golden file format \"" + line.substr(kMagic.size()) +
                         "\" is not one this build reads (1: \"step loss\" lines, 2)");
      g.format = 2;
      continue;
    }
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (g.format == 2) header_line(g, path, n, line);
      continue;
    }
    if (g.format == 2 && g.envelope_runs > 0 && g.envelope_noise <= 0)
      bad(path, n, "envelope_noise: the header declares envelope_runs but not the noise");
    data_line(g, path, n, line);
  }
  if (g.curve.empty()) throw UsageError(path + ": no losses");
  return g;
}

GoldenFile read_golden_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open golden file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_golden(ss.str(), path);
}

std::string golden_text(const GoldenFile& g) {
  std::string t = kMagic + "2\n";
  for (const auto& k : golden_environment_keys()) {
    auto it = g.environment.find(k);
    if (it != g.environment.end()) t += "# " + k + " = " + it->second + "\n";
  }
  char buf[160];
  if (g.has_envelope()) {
    std::snprintf(buf, sizeof buf, "# envelope_runs = %lld\n# envelope_noise = %.17g\n",
                  static_cast<long long>(g.envelope_runs), g.envelope_noise);
    t += buf;
    t += "# envelope_noise_source = " + g.envelope_noise_source + "\n";
    t += "# envelope_window = " + std::to_string(g.envelope_window) + "\n";
  }
  t += std::string("# exact_across_environments = ") + to_string(g.exact_across) + "\n";
  for (size_t i = 0; i < g.curve.size(); ++i) {
    if (g.has_envelope())
      std::snprintf(buf, sizeof buf, "%zu %.17g %.17g\n", i + 1, g.curve[i], g.envelope[i]);
    else
      std::snprintf(buf, sizeof buf, "%zu %.17g\n", i + 1, g.curve[i]);
    t += buf;
  }
  return t;
}

std::vector<std::string> environment_differences(const std::map<std::string, std::string>& golden,
                                                 const std::map<std::string, std::string>& here) {
  std::vector<std::string> out;
  for (const auto& k : golden_environment_keys()) {
    auto a = golden.find(k), b = here.find(k);
    if (a != golden.end() && b != here.end() && a->second != b->second) out.push_back(k);
  }
  return out;
}

}  // namespace lockstep::compare
