#include "harness/train/probe.h"

#include <stdexcept>

namespace lockstep::train {
namespace {

// splitmix64's finalizer: bucket and sign of element i of batch b.
uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

void ProbeRecorder::begin_forward(int64_t batch) {
  active_ = true;
  batch_ = batch;
  next_ = 0;
  kinds_.clear();
}

void ProbeRecorder::add(const char* kind, const torch::Tensor& t, const char* input) {
  if (!active_) return;
  // The call's ordinal within its kind: its inputs are recorded before its output, which counts
  // the call.
  int ordinal = 0;
  bool seen = false;
  for (auto& [k, n] : kinds_)
    if (k == kind) ordinal = input ? n : n++, seen = true;
  if (!seen) kinds_.emplace_back(kind, input ? 0 : 1);
  std::string name = std::string(kind) + "[" + std::to_string(ordinal) + "]";
  if (input) name += std::string(".") + input;
  if (next_ == sketches_.size()) {
    if (batch_ > 0) throw std::logic_error("probe: batch " + std::to_string(batch_) +
                                           " records more tensors than batch 0");
    names_.push_back(name);
    sketches_.emplace_back(kProbeBuckets, 0.0);
  } else if (names_[next_] != name) {
    throw std::logic_error("probe: tensor " + std::to_string(next_) + " is " + name +
                           " in this forward and " + names_[next_] + " in the first");
  }
  const auto x = t.detach().to(torch::kCPU, torch::kFloat64).contiguous();  // (numel)
  const double* p = x.data_ptr<double>();
  auto& sk = sketches_[next_++];
  const uint64_t salt = mix(static_cast<uint64_t>(batch_) << 40 | next_);
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    const uint64_t h = mix(salt ^ static_cast<uint64_t>(i));
    sk[h % kProbeBuckets] += (h >> 63) ? -p[i] : p[i];
  }
}

std::vector<std::vector<double>> ProbeRecorder::take(std::vector<std::string>* names) {
  *names = names_;
  auto out = std::move(sketches_);
  sketches_.clear();
  names_.clear();
  return out;
}

workloads::ModelKernels recording(workloads::ModelKernels k, ProbeRecorder* rec) {
  return {[f = std::move(k.attention), rec](const torch::Tensor& q, const torch::Tensor& kk,
                                            const torch::Tensor& v) {
            rec->add("attention", q, "q");  // (B, H, T, hd), as the kernel receives them
            rec->add("attention", kk, "k");
            rec->add("attention", v, "v");
            auto y = f(q, kk, v);  // (B, H, T, hd)
            rec->add("attention", y);
            return y;
          },
          [f = std::move(k.activation), rec](const torch::Tensor& x, const torch::Tensor& w,
                                             const torch::Tensor& b) {
            auto y = f(x, w, b);  // (B*T, 4C)
            rec->add("activation", y);
            return y;
          },
          [f = std::move(k.layer_norm), rec](const torch::Tensor& x, const torch::Tensor& w,
                                             const torch::Tensor& b, double eps) {
            rec->add("layer_norm", x, "x");  // (..., C): the residual stream
            auto y = f(x, w, b, eps);  // (..., C)
            rec->add("layer_norm", y);
            return y;
          }};
}

}  // namespace lockstep::train
