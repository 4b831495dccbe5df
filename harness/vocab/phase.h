// The phases of a training step, and the process's states around it: the watchdog's vocabulary
// (harness/train/watchdog.h), the phase timer's (harness/train/phase_timer.h) and the step hooks'
// (harness/train/hook/step_hook.h). Torch-free. Text only at the boundary: phase_name.
#pragma once

namespace lockstep {

enum class Phase {
  Setup,       // before the first step
  Turn,        // waiting for a compare timing pair's peer (its step, not this one)
  Data,        // the micro-batch's tokens, on the host
  Forward,     // to the loss (the batch's copy to the device first)
  Backward,    // the gradients of the micro-batch's loss
  Comm,        // the gradients reduced across ranks (and every collective waited for elsewhere)
  Optimizer,   // norms, clipping, the update
  Other,       // the step's remaining time: injected delays, reading the loss
  Checkpoint,  // after the step: its observers and the checkpoint save (not part of the step)
  Done,        // the run is over
};
constexpr int kPhaseCount = static_cast<int>(Phase::Done) + 1;

// A phase's two edges; a step hook sees both (StepHook::on_phase).
enum class Edge { Begin, End };

// Whether the phase is part of the step's time (PhaseTimer books it; records.h phase_names()).
constexpr bool in_step(Phase p) {
  return p == Phase::Data || p == Phase::Forward || p == Phase::Backward || p == Phase::Comm ||
         p == Phase::Optimizer || p == Phase::Other;
}

// Whether a long stay in the phase is this process's hang (not the peer's step, not idle).
constexpr bool watched(Phase p) {
  return p != Phase::Setup && p != Phase::Turn && p != Phase::Done;
}

// The phase's name in records, reports and the watchdog's message.
constexpr const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Setup: return "setup";
    case Phase::Turn: return "turn";
    case Phase::Data: return "data";
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Comm: return "comm";
    case Phase::Optimizer: return "optimizer";
    case Phase::Other: return "other";
    case Phase::Checkpoint: return "checkpoint";
    case Phase::Done: return "done";
  }
  return "?";
}

}  // namespace lockstep
