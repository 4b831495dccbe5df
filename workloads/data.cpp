#include "workloads/data.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>

namespace lockstep::workloads {
namespace {

double uniform01(uint64_t& s) {
  return static_cast<double>(splitmix64(s) >> 11) * 0x1.0p-53;
}

uint64_t mix(uint64_t seed, uint64_t index) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull ^ index;
  return splitmix64(s);
}

// A first-order Markov chain over the vocabulary. Every state has `fanout` successors with the
// same probability vector p_k ∝ 2^-k, so the entropy rate is exactly H(p) whatever the
// stationary distribution: the loss floor the report prints.
class SyntheticSource final : public TokenSource {
 public:
  SyntheticSource(int64_t vocab, int64_t fanout, uint64_t seed)
      : vocab_(vocab), fanout_(fanout), seed_(seed) {
    double z = 0;
    for (int64_t k = 0; k < fanout; ++k) z += std::ldexp(1.0, static_cast<int>(-k));
    double acc = 0;
    for (int64_t k = 0; k < fanout; ++k) {
      double p = std::ldexp(1.0, static_cast<int>(-k)) / z;
      floor_ -= p * std::log(p);
      acc += p;
      cdf_.push_back(acc);
    }
    cdf_.back() = 1.0;
    uint64_t s = mix(seed, 0xC0FFEEull);
    next_.resize(static_cast<size_t>(vocab * fanout));
    // Distinct successors per state: merged ones would lower the entropy below H(p).
    for (int64_t v = 0; v < vocab; ++v)
      for (int64_t k = 0; k < fanout; ++k) {
        int64_t t;
        bool dup;
        do {
          t = static_cast<int64_t>(splitmix64(s) % static_cast<uint64_t>(vocab));
          dup = false;
          for (int64_t j = 0; j < k; ++j)
            dup = dup || next_[static_cast<size_t>(v * fanout + j)] == t;
        } while (dup);
        next_[static_cast<size_t>(v * fanout + k)] = t;
      }
  }
  void sample(uint64_t index, int64_t* out, int64_t len) const override {
    uint64_t s = mix(seed_, index + 1);
    int64_t cur = static_cast<int64_t>(splitmix64(s) % static_cast<uint64_t>(vocab_));
    for (int64_t i = 0; i < len; ++i) {
      out[i] = cur;
      double u = uniform01(s);
      int64_t k = 0;
      while (k + 1 < fanout_ && u >= cdf_[static_cast<size_t>(k)]) ++k;
      cur = next_[static_cast<size_t>(cur * fanout_ + k)];
    }
  }
  std::string describe() const override {
    return "synthetic Markov chain, vocab " + std::to_string(vocab_) + ", fanout " +
           std::to_string(fanout_);
  }
  std::optional<double> loss_floor() const override { return floor_; }

 private:
  int64_t vocab_, fanout_;
  uint64_t seed_;
  double floor_ = 0;
  std::vector<double> cdf_;
  std::vector<int64_t> next_;
};

// Windows of a token array at offsets drawn from (seed, index).
class ArraySource final : public TokenSource {
 public:
  ArraySource(std::vector<int64_t> tokens, uint64_t seed, std::string what)
      : tokens_(std::move(tokens)), seed_(seed), what_(std::move(what)) {}
  void sample(uint64_t index, int64_t* out, int64_t len) const override {
    const uint64_t span = tokens_.size() - static_cast<uint64_t>(len) + 1;
    const uint64_t off = mix(seed_, index + 1) % span;
    for (int64_t i = 0; i < len; ++i) out[i] = tokens_[off + static_cast<uint64_t>(i)];
  }
  std::string describe() const override { return what_; }
  size_t size() const { return tokens_.size(); }

 private:
  std::vector<int64_t> tokens_;
  uint64_t seed_;
  std::string what_;
};

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open data file");
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

std::unique_ptr<TokenSource> make_source(const DataConfig& data, int64_t vocab_size,
                                         int64_t sample_len, uint64_t seed) {
  if (data.source == "synthetic")
    return std::make_unique<SyntheticSource>(vocab_size, data.fanout, seed);
  std::vector<char> bytes = read_all(data.path);
  std::vector<int64_t> tokens;
  std::string what;
  if (data.source == "text") {
    tokens.reserve(bytes.size());
    for (char c : bytes) tokens.push_back(static_cast<unsigned char>(c));
    what = "bytes of " + data.path;
  } else {  // "tokens": nanoGPT's raw uint16 array, or llm.c's with a 256 x int32 header
    size_t off = 0;
    if (bytes.size() >= 1024) {
      int32_t magic = 0;
      std::memcpy(&magic, bytes.data(), sizeof magic);
      if (magic == 20240520) off = 1024;
    }
    if ((bytes.size() - off) % 2 != 0)
      throw std::runtime_error(data.path + ": odd byte count for a uint16 token file");
    for (size_t i = off; i + 1 < bytes.size(); i += 2) {
      uint16_t t = 0;
      std::memcpy(&t, bytes.data() + i, 2);
      if (t >= vocab_size)
        throw std::runtime_error(data.path + ": token " + std::to_string(t) + " at position " +
                                 std::to_string((i - off) / 2) + " >= vocab_size " +
                                 std::to_string(vocab_size));
      tokens.push_back(t);
    }
    what = "uint16 tokens of " + data.path;
  }
  if (static_cast<int64_t>(tokens.size()) < sample_len)
    throw std::runtime_error(data.path + ": " + std::to_string(tokens.size()) +
                             " tokens, fewer than one sample (" + std::to_string(sample_len) + ")");
  return std::make_unique<ArraySource>(std::move(tokens), seed,
                                       what + " (" + std::to_string(tokens.size()) + " tokens)");
}

BatchStats batch_stats(const int64_t* tokens, size_t n) {
  BatchStats st;
  if (n == 0) return st;
  std::map<int64_t, size_t> counts;
  uint64_t h = 1469598103934665603ull;
  size_t repeats = 0;
  for (size_t i = 0; i < n; ++i) {
    ++counts[tokens[i]];
    if (i > 0 && tokens[i] == tokens[i - 1]) ++repeats;
    uint64_t t = static_cast<uint64_t>(tokens[i]);
    for (int b = 0; b < 8; ++b) h = (h ^ ((t >> (8 * b)) & 0xff)) * 1099511628211ull;
  }
  for (const auto& [tok, c] : counts) {
    double p = static_cast<double>(c) / static_cast<double>(n);
    st.token_entropy -= p * std::log(p);
  }
  st.repeat_share = n > 1 ? static_cast<double>(repeats) / static_cast<double>(n - 1) : 0.0;
  st.hash = h;
  return st;
}

}  // namespace lockstep::workloads
