// The golden file `run --export-losses` writes and `compare --golden` reads (docs/golden.md).
//
// Format 2 (issue 54): a first line "# lockstep golden 2", then "# key = value" header lines (the
// exporting environment, and the noise envelope measured there), then one line per step:
// "step loss" or, with an envelope, "step loss E" (E = the envelope at that step). Readers of
// format 1 skip '#' lines and read the first two numbers of each line, so they still read it.
// Format 1: "step loss" lines only (and '#' comments); judged by the seed band, as before.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lockstep::compare {

// How an exact knob class is judged when the golden environment differs from this one.
enum class ExactAcross { Tolerance, Envelope };

struct GoldenFile {
  int format = 1;                              // 1: "step loss" lines; 2: with a header
  std::map<std::string, std::string> environment;  // the golden_environment_keys() found
  std::vector<double> curve;                   // index 0 = step 1
  std::vector<double> envelope;                // E per step; empty: none recorded
  int64_t envelope_runs = 0;                   // K perturbed runs behind E
  double envelope_noise = 0;                   // their relative weight noise u
  std::string envelope_noise_source;           // "unit roundoff of bf16 (2^-8)"
  int64_t envelope_window = 0;                 // E's trailing window (steps)
  ExactAcross exact_across = ExactAcross::Tolerance;
  bool has_envelope() const { return !envelope.empty(); }
};

// The environment keys a golden file records and compares, in order: libtorch, device,
// compiler, blas, threads, aten_cpu_capability.
const std::vector<std::string>& golden_environment_keys();

// Reads either format; throws UsageError naming file, line and (for a header line) the key.
GoldenFile read_golden_file(const std::string& path);
// Parses `text` as the file `path` would be read (the path only names it in errors).
GoldenFile parse_golden(const std::string& text, const std::string& path);

// Format 2 text (the header, then the lines; a third column when the envelope is set).
std::string golden_text(const GoldenFile& g);

// The recorded keys whose values differ between the golden environment and `here` (a key
// missing on either side is not compared).
std::vector<std::string> environment_differences(const std::map<std::string, std::string>& golden,
                                                 const std::map<std::string, std::string>& here);

const char* to_string(ExactAcross e);

}  // namespace lockstep::compare
