// The comparison's reporters (the interface: reports/reporter_for.h): one class per format
// (console, json, markdown, html, junit) and a factory. Each renders a compare::CompareResult to
// text; write_reports() puts every file format into a comparison's folder.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/vocab/compare_result.h"
#include "reports/reporter_for.h"
#include "reports/text.h"

namespace lockstep::reports {

using Reporter = ReporterFor<compare::CompareResult>;

// Throws std::invalid_argument (listing the known formats) for an unknown one.
std::unique_ptr<Reporter> make_reporter(const std::string& format);

// The formats that are files: json, markdown, html, junit.
const std::vector<std::string>& report_formats();

// Writes every file report into dir (created if missing) atomically (util::write_atomic) and
// returns their paths.
std::vector<std::filesystem::path> write_reports(const compare::CompareResult& r,
                                                 const std::filesystem::path& dir);

// The comparison's wording for the human-readable formats (with reports/text.h's).
namespace text {
std::string delta_value(const compare::Delta& d, const std::string& unit);  // "+9.0%" | "unknown"
std::string delta_ci(const compare::Delta& d, const std::string& unit);  // "[+7.1%, +10.8%]" | "-"
std::string p_value(const compare::Delta& d);                            // "0.008" | "<0.001" | "-"
std::string knob_name(config::Knob k);                 // "exact", "approximate", ...
// "none", or "FILE (sha256 HEX)" per plugin, "; "-separated: which kernel build an arm ran.
std::string plugins(const std::vector<PluginRef>& p);
// Whether either arm loads a plugin (the reports then name each arm's plugin files).
bool any_plugins(const compare::CompareResult& r);
// "5 repeats per arm", or why there is no timing: "not timed (golden mode)", "not timed (...)".
std::string timing_summary(const compare::CompareResult& r);
// The function probe in one sentence: "function probe (4 checkpoints x 10 tensors, 3 noise
// probes): largest ratio 1.38 (activation[1] at step 120), bound 2.5: inside"; its note when it
// did not run; "" when not planned.
std::string probe_summary(const compare::Alignment& a);
// Why the envelope's noise is that dtype's: "bf16, declared in the variant's hello", "bf16, the
// variant's [precision] compute", "fp32, the default (...)"; then what the variant's trainer was
// seen computing in when that differs ("observed, not declared"). "" without an envelope or when
// [gate] envelope_noise set the noise.
std::string noise_dtype_origin(const compare::CompareResult& r);
// The tests behind the performance table: "medians, 95% bootstrap CI, Mann-Whitney p", and for
// pairs that took turns "tokens/s: paired t over the pairs' log ratios; ..." first.
std::string timing_methods(const compare::CompareResult& r);
// repeats = "auto": where the sequence stopped and why, and each look's level; "" otherwise.
std::string sequential_summary(const compare::CompareResult& r);
// " " + s + "." for a non-empty s (a sentence after another), "" for an empty one.
std::string sentence(const std::string& s);
// Latency rows with their sample size: "step ms, P50 (n=150)"; the tail row names what the tail
// check used: "step ms, P99 (n=1000)" or "step ms, max of 150 steps".
std::string p50_label(const compare::CompareResult& r);
std::string tail_label(const compare::CompareResult& r);
// The MFU rows: "MFU (own peak)" (each arm's dtype peak) and "MFU (common peak)".
std::string mfu_own_label();
std::string mfu_common_label();
// One line on the common peak: whose, its source and FLOP/s; "" when unknown.
std::string common_peak_note(const compare::CompareResult& r);
// "minimum detectable effect (power 0.8, level 0.025): tokens/s 3.1%, P50 2.0%, max of 150
// steps 41.0%"; "" when unknown (not timed, fewer than 2 repeats).
std::string power_summary(const compare::CompareResult& r);
// "1 timing check inconclusive (its CI straddles the bound; on_inconclusive = pass)"; "" if none.
std::string inconclusive_summary(const compare::CompareResult& r);
}  // namespace text

}  // namespace lockstep::reports
