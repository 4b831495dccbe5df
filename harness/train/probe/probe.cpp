#include "harness/train/probe/probe.h"

#include <algorithm>
#include <stdexcept>

#include "harness/util/splitmix.h"

namespace lockstep::train {
namespace {

using util::splitmix64;

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
    if (batch_ > 0)
      throw std::logic_error("probe: batch " + std::to_string(batch_) +
                             " records more tensors than batch 0");
    names_.push_back(name);
    sketches_.emplace_back();
  } else if (names_[next_] != name) {
    throw std::logic_error("probe: tensor " + std::to_string(next_) + " is " + name +
                           " in this forward and " + names_[next_] + " in the first");
  }
  const uint64_t salt = splitmix64(static_cast<uint64_t>(batch_) << 40 | (next_ + 1));
  sketch_into(sketches_[next_++], t, salt);
}

// The sketch where the tensor lives (issue 36): element i = r m + c goes to bucket c with sign
// u_r, so the sketch of the row-major (R, m) view is one matrix-vector product u^T X, in fp64, on
// the tensor's device, in fixed row chunks: deterministic (the same tensor gives the same sketch
// bitwise on that device), no atomics, nothing copied to the host but the m buckets at take(). m
// is prime, so a structure of any period below m (a channel of C = 768, a head of 64) spreads over
// every bucket; the signs make each bucket's sum an unbiased estimate of its elements' energy.
void ProbeRecorder::sketch_into(torch::Tensor& sketch, const torch::Tensor& t, uint64_t salt) {
  torch::NoGradGuard no_grad;
  const auto x = t.detach().contiguous().view({-1});  // (n), as the kernel saw it
  const int64_t n = x.numel(), rows = n / kProbeBuckets, tail = n % kProbeBuckets;
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(x.device());
  if (!sketch.defined()) sketch = torch::zeros({kProbeBuckets}, f64);
  auto& u = signs_[{salt, rows + 1}];  // u_r for r = 0 .. rows (the last one the tail's)
  if (!u.defined() || u.device() != x.device()) {
    std::vector<double> h(static_cast<size_t>(rows + 1));
    for (int64_t r = 0; r <= rows; ++r)
      h[static_cast<size_t>(r)] = (splitmix64(salt ^ static_cast<uint64_t>(r)) >> 63) ? -1.0 : 1.0;
    u = torch::tensor(h, torch::TensorOptions().dtype(torch::kFloat64)).to(x.device());
  }
  // Row chunks bound the fp64 copy: on a CPU a cache's worth (2 MB: the GEMV reads the copy
  // from cache, not memory), on a GPU 512 MB (few launches; a gpt2-124m logits tensor is 0.4 G
  // elements at B = 8).
  const int64_t chunk = x.device().is_cpu() ? int64_t{1} << 18 : int64_t{1} << 26;
  const int64_t chunk_rows = std::max<int64_t>(1, chunk / kProbeBuckets);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const int64_t nr = std::min(chunk_rows, rows - r0);
    const auto block = x.narrow(0, r0 * kProbeBuckets, nr * kProbeBuckets)
                           .view({nr, kProbeBuckets})
                           .to(torch::kFloat64);    // (nr, m)
    sketch.addmv_(block.t(), u.narrow(0, r0, nr));  // (m) += X^T u
  }
  if (tail > 0)
    sketch.narrow(0, 0, tail)
        .add_(x.narrow(0, rows * kProbeBuckets, tail).to(torch::kFloat64) * u.narrow(0, rows, 1));
}

std::vector<std::vector<double>> ProbeRecorder::take(std::vector<std::string>* names) {
  *names = names_;
  std::vector<std::vector<double>> out;
  for (const auto& s : sketches_) {  // m buckets each: the only bytes that leave the device
    const auto h = s.to(torch::kCPU).contiguous();
    out.emplace_back(h.data_ptr<double>(), h.data_ptr<double>() + h.numel());
  }
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
            auto y = f(x, w, b, eps);        // (..., C)
            rec->add("layer_norm", y);
            return y;
          }};
}

}  // namespace lockstep::train
