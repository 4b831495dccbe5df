// A probe run's record (harness/train/probe/probe.h): what the model computed at each checkpoint of the
// baseline's alignment run, one CountSketch per recorded tensor. No LibTorch here: `compare`
// reads these files to judge the variant (harness/compare/probe_check.h).
//
// Files in the probe run's folder: probe.json (steps, tensor names, buckets per sketch) and
// probe.bin (little-endian float64, [step][tensor][bucket]).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lockstep::train {

// m: buckets per recorded tensor (a prime). The sketch itself: harness/train/probe/probe.h, and
// for any language docs/protocol.md "The CountSketch".
constexpr int64_t kProbeBuckets = 4093;

struct ProbeRecord {
  std::vector<int64_t> steps;        // the checkpoints' steps, ascending
  std::vector<std::string> tensors;  // "layer_norm[0]", "attention[0]", ..., "logits"
  int64_t buckets = 0;               // m
  std::vector<std::vector<std::vector<double>>> sketches;  // [step][tensor][bucket]
};

void write_probe(const std::filesystem::path& dir, const ProbeRecord& p);
// Throws std::runtime_error naming the file when it is missing or does not match its index.
ProbeRecord read_probe(const std::filesystem::path& dir);

}  // namespace lockstep::train
