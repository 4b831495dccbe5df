// The comparison's vocabulary as types: how a comparison runs (Mode), what each run is for
// (Arm, Role), how the loss alignment is judged (Rule), how a timing pair runs (Interleave), what a
// check found (Verdict), what it judges (CheckKind). The knob class is config::Knob. Text only at
// the JSON and report boundary: to_string() gives the exact words report.json has always carried
// (docs/report-schema.md).
#pragma once

#include <string>

namespace lockstep::compare {

enum class Arm { Baseline, Variant };
enum class Mode { AB, Golden };  // two configs | a variant against a recorded loss curve
// "full": an arm at the comparison seed; "envelope": the baseline with rounding-sized weight
// noise; "seed band": an arm at another seed; "probe": a forward at fixed weights; "timing".
enum class Role { Full, Envelope, SeedBand, Probe, Timing };
// Tolerance (exact knobs) | Envelope (approximate knobs) | SeedBand (approximate knobs where no
// envelope can run) | None (declared, not judged) | NotApplicable (a workload change).
enum class Rule { Tolerance, Envelope, SeedBand, None, NotApplicable };
// Where the compute dtype behind the noise envelope's u was declared: the trainer's hello, the
// arm's [precision] compute, neither (the default, fp32), or no dtype at all ([gate]
// envelope_noise sets u itself).
enum class DtypeFrom { Hello, Config, Default, Gate };
// Step: a pair's runs at the same time, taking turns step by step; Repeat: one after the other.
enum class Interleave { Repeat, Step };
// A check's verdict (timing checks: the whole CI on the allowed side, beyond the bound, or
// straddling it; the other checks pass or fail), and the comparison's (pass or fail).
enum class Verdict { Pass, Fail, Inconclusive };
// What a gate check judges (harness/gate/gate.h), in the gate's order; to_string is its display
// name, the "name" report.json has always carried.
enum class CheckKind {
  KernelConformance,
  RunsCompleted,
  BaselineDeterministic,
  VariantDeterministic,
  LossAlignment,
  Throughput,
  P99Latency,
  MinSpeedup,
  MemorySaving,
  FiniteValues
};

// report.json's words for where the envelope's dtype came from.
inline const char* to_string(DtypeFrom f) {
  switch (f) {
    case DtypeFrom::Hello: return "hello";
    case DtypeFrom::Config: return "config";
    case DtypeFrom::Default: return "default";
    case DtypeFrom::Gate: return "gate";
  }
  return "?";
}

// Passed or failed, not inconclusive.
inline bool decided(Verdict v) {
  return v != Verdict::Inconclusive;
}
inline Verdict verdict_from(bool passed) {
  return passed ? Verdict::Pass : Verdict::Fail;
}

inline const char* to_string(Arm a) {
  return a == Arm::Baseline ? "baseline" : "variant";
}
inline const char* to_string(Mode m) {
  return m == Mode::AB ? "ab" : "golden";
}
inline const char* to_string(Role r) {
  switch (r) {
    case Role::Full: return "full";
    case Role::Envelope: return "envelope";
    case Role::SeedBand: return "seed band";
    case Role::Probe: return "probe";
    case Role::Timing: return "timing";
  }
  return "?";
}
inline const char* to_string(Rule r) {
  switch (r) {
    case Rule::Tolerance: return "tolerance";
    case Rule::Envelope: return "envelope";
    case Rule::SeedBand: return "seed band";
    case Rule::None: return "none";
    case Rule::NotApplicable: return "not applicable";
  }
  return "?";
}
inline const char* to_string(Interleave i) {
  return i == Interleave::Step ? "step" : "repeat";
}
inline const char* to_string(Verdict v) {
  return v == Verdict::Pass ? "pass" : v == Verdict::Fail ? "fail" : "inconclusive";
}
inline const char* to_string(CheckKind k) {
  switch (k) {
    case CheckKind::KernelConformance: return "kernel conformance";
    case CheckKind::RunsCompleted: return "runs completed";
    case CheckKind::BaselineDeterministic: return "baseline deterministic";
    case CheckKind::VariantDeterministic: return "variant deterministic";
    case CheckKind::LossAlignment: return "loss alignment";
    case CheckKind::Throughput: return "throughput";
    case CheckKind::P99Latency: return "p99 latency";
    case CheckKind::MinSpeedup: return "min speedup";
    case CheckKind::MemorySaving: return "memory saving";
    case CheckKind::FiniteValues: return "finite values";
  }
  return "?";
}

}  // namespace lockstep::compare
