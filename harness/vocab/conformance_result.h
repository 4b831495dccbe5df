// Kernel conformance (issue 35; docs/method.md "Kernel conformance"): every kernel a variant
// brings, checked against its slot's exact math on inputs built to expose errors before anything
// is timed. What a check found, torch-free: `lockstep conformance` writes it (--json), `compare`
// reads it into report.json `conformance` and the gate's `kernel conformance` check.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lockstep {

// One (slot, kernel, case, direction, dtype): the kernel's largest error against the fp64
// reference and its bound, c x the built-in's error on the same inputs (+ a floor).
struct ConformanceRow {
  std::string slot;       // "attention" | "activation" | "layer_norm" | "loss" | "optimizer"
  std::string kernel;     // the entry's name
  std::string origin;     // "built-in" or the plugin file's name
  std::string knob;       // "exact" | "approximate": which built-in error it is held to
  std::string case_name;  // "peaked_softmax", "one_huge_logit", ...
  std::string shape;      // "B 2, H 4, T 128, hd 32"
  std::string direction;  // "forward" | "grad q" | ... | "step 5 param"
  std::string dtype;      // the dtype it ran in ("bf16", "fp32")
  double error = 0;           // max |kernel - fp64 reference|
  double builtin_error = 0;   // max |built-in - reference| (at fp32 for an exact kernel)
  std::string builtin;        // the built-in it is held to
  double factor = 0;          // c
  double floor = 0;           // the absolute floor (a few fp32 ulps of the output)
  double bound = 0;           // factor * builtin_error + floor
  bool passed = true;         // error is finite and <= bound
  double ratio() const { return bound > 0 ? error / bound : 0; }
  // `attention "my_attn": case peaked_softmax (B 2, H 4, T 128, hd 32, bf16) forward: max error
  // 3.1e-2 > 2 x 4.0e-3 (the built-in's) + 1.2e-6`
  std::string verdict_line() const;
};

struct ConformanceReport {
  std::vector<ConformanceRow> rows;
  std::vector<std::string> kernels;  // "attention \"my_attn\"" for each kernel checked
  std::string device = "cpu";
  double seconds = 0;
  bool passed() const;
  const ConformanceRow* worst() const;  // the failing row of largest ratio (else the largest)
};

void write_conformance(const std::filesystem::path& file, const ConformanceReport& r);
// Throws std::runtime_error naming the file when it is missing or malformed.
ConformanceReport read_conformance(const std::filesystem::path& file);

}  // namespace lockstep
