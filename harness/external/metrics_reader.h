// The external trainer's metrics protocol: one JSON object per line and per step, the fields of
// Lockstep's own metrics.jsonl (docs/extending.md "The metrics protocol"):
//   required  step (1, 2, 3, ... in order), loss (null when not finite), step_ms, tokens
//   optional  grad_norm, lr, data_ms, forward_ms, backward_ms, comm_ms, optimizer_ms, other_ms,
//             peak_memory_bytes, observed_compute (the dtype the trainer's helper saw it compute
//             in: a precision's name; shown in the report, never used for the envelope)
// Other fields are ignored. MetricsTail reads the file while the trainer still writes it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/vocab/records.h"
#include "harness/vocab/trainer_protocol.h"

namespace lockstep::external {

// One validated line.
struct ExternalStep {
  StepRecord record;  // `timed` is left false: the runner decides it (warmup steps)
  std::optional<int64_t> peak_memory_bytes;
  std::string observed_compute;  // "" when the line does not say
};

// Parses and validates line `line_no` of the file; `previous_step` is the step of the line before
// (0 for the first). Throws std::runtime_error with "line N: what is wrong" on any problem.
ExternalStep parse_step_line(const std::string& line, int64_t line_no, int64_t previous_step);

// The hello (protocol 2, docs/protocol.md) a line carries, if any: a "lockstep" object with
// "protocol" (an integer >= 1), "supports" (capability names; names this Lockstep does not
// know are ignored) and, optionally, "compute" (fp32, tf32, bf16 or fp16: the dtype the trainer
// computes in, which sets the noise envelope's u). `only_hello` is set when the line carries no step (a hello line of its own).
// Throws std::runtime_error "line N: ..." when "lockstep" is malformed.
std::optional<TrainerProtocol> parse_hello(const std::string& line, int64_t line_no, bool* only_hello);

// The complete lines appended to a file since the last call. A line without its '\n' yet waits
// for the next call (the trainer is still writing it), unless `at_end` (the trainer has exited).
class MetricsTail {
 public:
  explicit MetricsTail(std::filesystem::path path) : path_(std::move(path)) {}
  struct Line {
    std::string text;
    int64_t number = 0;  // 1-based line number in the file
  };
  std::vector<Line> read_new(bool at_end = false);
  bool exists() const;

 private:
  std::filesystem::path path_;
  uint64_t offset_ = 0;
  int64_t line_no_ = 0;
  std::string partial_;
};

}  // namespace lockstep::external
