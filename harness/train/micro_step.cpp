#include "harness/train/micro_step.h"

#include <stdexcept>
#include <string>

#include "harness/train/step_graph.h"

namespace lockstep::train {
namespace {

class EagerStep final : public MicroStep {
 public:
  explicit EagerStep(RankModel& m) : m_(m) {}
  bool begin_step(int64_t, bool) override { return false; }
  Losses forward(const Batch& b) override { return m_.model_loss(b.x, b.y); }
  void backward(const torch::Tensor& train, double scale) override { (train * scale).backward(); }

 private:
  RankModel& m_;
};

class GraphedStep final : public MicroStep {
 public:
  explicit GraphedStep(RankModel& m) : eager_(m), m_(m) {}

  bool begin_step(int64_t step, bool eager) override {
    step_ = step;
    graphed_ = step >= 2 && !eager;
    return graphed_ && !graph_.captured();
  }

  // The captured forward (captured here first); its loss is a static tensor that the next replay
  // overwrites, so it is read before then.
  Losses forward(const Batch& b) override {
    if (!graphed_) return eager_.forward(b);
    if (!graph_.captured()) capture(b);
    Losses l;
    l.reported = l.train = graph_.forward(b.x, b.y);
    return l;
  }

  void backward(const torch::Tensor& train, double scale) override {
    if (graphed_)
      graph_.backward(scale);
    else
      eager_.backward(train, scale);
  }

 private:
  void capture(const Batch& b) {
    try {
      graph_.capture(b.x, b.y, [this](const torch::Tensor& x, const torch::Tensor& y) {
        const Losses l = m_.model_loss(x, y);
        return std::make_pair(l.reported, l.train);
      });
    } catch (const std::exception& e) {
      throw std::runtime_error("run.cuda_graphs: capturing step " + std::to_string(step_) +
                               " failed: " + e.what());
    }
  }

  EagerStep eager_;
  RankModel& m_;
  StepGraph graph_;
  int64_t step_ = 0;
  bool graphed_ = false;
};

}  // namespace

std::unique_ptr<MicroStep> make_micro_step(RankModel& m) {
  if (m.run.cuda_graphs) return std::make_unique<GraphedStep>(m);
  return std::make_unique<EagerStep>(m);
}

}  // namespace lockstep::train
