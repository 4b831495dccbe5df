#include "workloads/data_config.h"

#include <filesystem>

namespace lockstep::workloads {
namespace {

// data.path as an absolute path: relative to the file that set it (to the working directory for
// a --set). The effective config, written into the run folder, then names the same file when
// `run --resume` reads it back from there, and the config hash names the data, not the spelling.
void resolve_path(config::Config& c) {
  if (!c.has_value("data.path")) return;
  std::filesystem::path p = c.str("data.path");
  if (p.empty() || p.is_absolute()) return;
  const std::string& origin = c.where("data.path").file;  // "<--set ...>" for overrides
  if (origin.rfind("<", 0) != 0) p = std::filesystem::path(origin).parent_path() / p;
  std::error_code ec;
  const auto abs = std::filesystem::absolute(p, ec);
  if (!ec) c.resolve("data.path", abs.lexically_normal().string(), "data.path");
}

void finalize_data(config::Config& c) {
  const std::string& src = c.str("data.source");
  if (src != "synthetic" && !c.has_value("data.path"))
    c.fail("data.source", "source \"" + src + "\" needs data.path");
  resolve_path(c);
  if (src == "text" && c.integer("model.vocab_size") < 256)
    c.fail("model.vocab_size", "source \"text\" reads bytes: vocab_size must be >= 256");
  if (src == "tokens" && c.integer("model.vocab_size") > 65536)
    c.fail("model.vocab_size",
           "source \"tokens\" reads uint16 tokens: vocab_size must be <= 65536");
  const int64_t world = c.integer("parallel.world_size"), batch = c.integer("data.batch_size");
  // Cross-key rules point at a key the user wrote (a default has no line in any file).
  auto at = [&](const char* first, const char* other) {
    return c.is_set(first) || !c.is_set(other) ? first : other;
  };
  if (batch % world != 0)
    c.fail(at("data.batch_size", "parallel.world_size"),
           "batch_size = " + std::to_string(batch) +
               " (global) is not divisible by world_size = " + std::to_string(world));
  if (src == "synthetic" && c.integer("data.fanout") > c.integer("model.vocab_size"))
    c.fail(at("data.fanout", "model.vocab_size"), "fanout must not exceed vocab_size");
}

}  // namespace

const config::SectionSchema& data_schema() {
  using config::KeySpec;
  static const config::SectionSchema s{
      "data",
      "Training data, deterministic from (seed, step, sample index).",
      {
          KeySpec::Str("source", "synthetic",
                       "synthetic Markov stream | bytes of a file | uint16 token file")
              .one_of({"synthetic", "text", "tokens"}),
          KeySpec::Str("path", std::nullopt, "file for text/tokens (relative to the config file)"),
          KeySpec::Int("batch_size", 8, "global sequences per micro-step, split over the ranks")
              .range(1, 1 << 20),
          KeySpec::Int("grad_accum", 1, "micro-steps per optimizer step").range(1, 4096),
          KeySpec::Int("fanout", 4, "synthetic: successors per token (sets the loss floor)")
              .range(1, 64),
      },
      finalize_data,
  };
  return s;
}

DataConfig DataConfig::from(const config::Config& c) {
  DataConfig d;
  d.source = c.str("data.source");
  if (c.has_value("data.path")) d.path = c.str("data.path");  // absolute (finalize)
  d.batch_size = c.integer("data.batch_size");
  d.grad_accum = c.integer("data.grad_accum");
  d.fanout = c.integer("data.fanout");
  return d;
}

}  // namespace lockstep::workloads
