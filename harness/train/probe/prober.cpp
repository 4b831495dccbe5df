#include "harness/train/probe/prober.h"

#include <algorithm>
#include <string>
#include <vector>

#include "harness/train/checkpoint.h"
#include "harness/train/model_builder.h"
#include "harness/train/probe/probe.h"

namespace lockstep::train {

Prober::Prober(const config::Config& cfg, const dist::RankInfo& who,
               std::filesystem::path checkpoints)
    : checkpoints_(std::move(checkpoints)), recorder_(std::make_unique<ProbeRecorder>()) {
  BuildOptions opts;
  opts.probe = true;
  opts.wrap_kernels = [rec = recorder_.get()](workloads::ModelKernels k) {
    return recording(std::move(k), rec);
  };
  m_ = build_rank_model(cfg, who, opts);
}

Prober::~Prober() = default;

ProbeRecord Prober::run() {
  auto& m = *m_;
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(checkpoints_)) {
    const std::string n = e.path().filename().string();
    if (e.is_directory() && n.rfind("step-", 0) == 0 && n.find('.') == std::string::npos)
      dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());  // step-%08d: by step
  ProbeRecord out;
  out.buckets = kProbeBuckets;
  torch::NoGradGuard no_grad;
  for (const auto& dir : dirs) {
    const auto st = load_checkpoint(dir, *m.sharding, m.who.rank);
    m.faults.on_params(st.step, *m.sharding);  // the envelope's noise, if any (as in that step)
    for (int64_t b = 0; b < kProbeBatches; ++b) {
      const int64_t step = m.run.steps + 1 + b;  // batches no training step has seen
      auto tokens = m.host_tokens(step, 0);      // (B, T+1)
      m.faults.on_batch(step, tokens.data_ptr<int64_t>(), tokens.numel());
      const Batch batch = m.to_device(tokens, nullptr);  // (B, T) each
      recorder_->begin_forward(b);
      auto scope = m.precision->forward_scope();
      auto logits = m.model->forward(batch.x);  // (B, T, V)
      recorder_->add("logits", logits);
      recorder_->end_forward();
    }
    m.sharding->restore_params();
    std::vector<std::string> names;
    out.sketches.push_back(recorder_->take(&names));
    out.tensors = names;
    out.steps.push_back(st.step);
  }
  return out;
}

}  // namespace lockstep::train
