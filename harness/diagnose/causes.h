// Causes of an event (harness/diagnose/spikes.h), ranked from the signals a run logs. Every cause
// gets a score in [0, 1] and an evidence string that quotes the numbers; causes are sorted by
// score (rounded to 3 decimals), ties broken in the standard order
//   data -> lr -> grad -> numerics -> hardware -> sync
// (the order to check by hand: cheap, common causes first).
//
// Windows. L = the event's loss step (Event::loss_step()): the loss at step s is computed before
// the update of step s, so a bad update at s shows in the loss at s+1.
//   data      batches of steps L-2 .. L, every rank (the batch of L itself, and the two just
//   trained
//             on). Per step and rank: entropy drop = (median - entropy) / median and repeated-token
//             excess = (share - median) / (1 - median), each counted only when its robust z against
//             the previous 50 steps is >= 5 (MAD 0: any difference) and it is >= 0.1 (smaller
//             changes are ordinary batch-to-batch variation). Score = the largest, x0.9
//             for steps before L. Evidence quotes the batch_hash to replay the batch.
//   lr        LR of steps L-3 .. L-1 against the step before: a jump of ratio q >= 1.5 scores
//             min(1, ln q / ln 4) (4x or more = 1). Without a jump, the end of warmup (the first
//             LR peak) within 10 steps before L scores 0.25 * (1 - distance/10).
//   grad      grad_norm of steps L-3 .. L against the median of the 20 steps before: ratio q scores
//             min(1, log10(q) / 2) (100x = 1); a step whose own loss spiked counts half (a high
//             loss explains a high gradient). The rise of the grad-norm trend over the 10 steps
//             before L (least squares on log grad_norm) scores the same way, x0.8. Evidence names
//             the unit (0 = embeddings/head, i = block i-1) with the largest rise at the worst
//             step.
//   numerics  steps L-3 .. last: a non-finite loss = 1; non-finite gradient elements or an fp16
//             overflow (update skipped) = 0.8; a loss-scale drop alone = 0.3.
//   hardware  a step-time spike (spikes.h) in the event with no rank asymmetry: 0.5 when data, lr,
//             grad and numerics all score < 0.3, else 0.2; 0.1 when the slowness is one rank's
//             (that is sync). Always worded as a guess: the run logs no hardware counters.
//   sync      (a) one rank's own time (step_ms - comm_ms) rises by E >= (3-1) x its median step
//             while the other ranks stay < E/4 above theirs, and another rank's comm time at that
//             step or the next rises by W: 0.5 + 0.5 * min(1, W / E). (b) ranks' local losses
//             disagree: relative spread (max - min) / mean of local_loss with robust z >= 8 and
//             >= 3x its median over the previous 50 steps: min(1, log10(ratio) / 1.5). Max of both.
#pragma once

#include <string>
#include <vector>

#include "harness/diagnose/spikes.h"

namespace lockstep::diagnose {

// "data", "lr", "grad", "numerics", "hardware", "sync": the standard order.
const std::vector<std::string>& cause_order();

struct Cause {
  std::string cause;
  double score = 0;  // 0..1, rounded to 3 decimals
  std::string evidence;
};

struct Diagnosis {
  Event event;
  std::vector<Cause> causes;  // most likely first
  bool explained() const { return !causes.empty() && causes.front().score >= 0.2; }
};

// Scores every cause for one event; sorted most likely first.
std::vector<Cause> score_causes(const RunRecords& run, const Event& e);

// Sorts by score (descending), ties in the standard order.
void sort_causes(std::vector<Cause>& causes);

// Every event in the run, diagnosed.
std::vector<Diagnosis> diagnose(const RunRecords& run, const SpikeThresholds& t = {});

}  // namespace lockstep::diagnose
