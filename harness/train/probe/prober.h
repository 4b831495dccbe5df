// A probe run (`lockstep run CONFIG --probe RUN`): the forward at each checkpoint of a baseline's
// alignment run, on the probe batches, under this config's numerics, recording a CountSketch of
// every tensor the model's kernels receive and return (harness/train/probe/probe.h). No training:
// one rank, zero_stage 0. Built on the trainer's model builder (harness/train/model_builder.h).
#pragma once

#include <filesystem>
#include <memory>

#include "harness/config/config.h"
#include "harness/dist/rendezvous.h"
#include "harness/vocab/probe_file.h"

namespace lockstep::train {

struct RankModel;
class ProbeRecorder;

class Prober {
 public:
  // `checkpoints`: a checkpoints root (its step-N folders are probed in step order). Throws
  // config::ConfigError (exit 2) as the trainer does, and for more than one rank or ZeRO.
  Prober(const config::Config& cfg, const dist::RankInfo& who, std::filesystem::path checkpoints);
  ~Prober();
  ProbeRecord run();

 private:
  std::filesystem::path checkpoints_;
  std::unique_ptr<ProbeRecorder> recorder_;
  std::unique_ptr<RankModel> m_;
};

}  // namespace lockstep::train
