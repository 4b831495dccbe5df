#include "harness/diagnose/causes.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>

#include "harness/stats/statistics.h"
#include "harness/util/format.h"

namespace lockstep::diagnose {

const std::vector<std::string>& cause_order() {
  static const std::vector<std::string> order{"data", "lr", "grad", "numerics", "hardware", "sync"};
  return order;
}

void sort_causes(std::vector<Cause>& causes) {
  auto rank = [](const std::string& c) {
    const auto& o = cause_order();
    return std::find(o.begin(), o.end(), c) - o.begin();
  };
  std::stable_sort(causes.begin(), causes.end(), [&](const Cause& a, const Cause& b) {
    return a.score != b.score ? a.score > b.score : rank(a.cause) < rank(b.cause);
  });
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr size_t kHistory = 50;      // steps a per-step statistic is compared with
constexpr size_t kGradHistory = 20;  // steps the grad norm is compared with
constexpr double kDataZ = 5;
constexpr double kDataMinEffect = 0.1;  // entropy drop / repeated-token excess below this is noise
constexpr double kSpreadZ = 8, kSpreadRatio = 3;
constexpr double kStragglerRatio = 3;  // own time >= (3-1) x median step above its median

using Field = std::function<double(const StepRecord&)>;

std::string times(double q) {
  return q >= 100 ? util::format_number("%.0fx", q) : util::format_number("%.1fx", q);
}
std::string hex(uint64_t h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, h);
  return buf;
}
std::string steps_range(int64_t a, int64_t b) {
  return a == b ? "step " + std::to_string(a)
                : "steps " + std::to_string(a) + "-" + std::to_string(b);
}
double clamp01(double x) {
  return std::isfinite(x) ? std::clamp(x, 0.0, 1.0) : (x > 0 ? 1.0 : 0.0);
}
double round3(double x) {
  return std::round(x * 1000.0) / 1000.0;
}

// Finite values of `field` on the last n records of `series` before step `before`.
std::vector<double> history(const std::vector<StepRecord>& series, int64_t before, size_t n,
                            const Field& field, bool timed_only = false) {
  std::vector<double> out;
  for (auto it = series.rbegin(); it != series.rend() && out.size() < n; ++it) {
    if (it->step >= before || (timed_only && !it->timed)) continue;
    double v = field(*it);
    if (std::isfinite(v)) out.push_back(v);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

struct Baseline {
  double med = kNaN, mad = kNaN;
  size_t n = 0;
  explicit Baseline(const std::vector<double>& x) : n(x.size()) {
    if (!x.empty()) med = stats::median(x), mad = stats::mad(x);
  }
  bool ok(size_t min_n = 5) const { return n >= min_n && std::isfinite(med); }
  // Robust z of x; with MAD 0, +/-inf for any difference.
  double z(double x) const {
    if (!std::isfinite(x) || !ok(1)) return kNaN;
    if (mad > 0) return (x - med) / (1.4826 * mad);
    return x == med ? 0.0 : (x > med ? INFINITY : -INFINITY);
  }
};

double own_ms(const StepRecord& r) {
  auto it = r.phase_ms.find("comm");
  return r.step_ms - (it == r.phase_ms.end() ? 0.0 : it->second);
}
double phase(const StepRecord& r, const std::string& p) {
  auto it = r.phase_ms.find(p);
  return it == r.phase_ms.end() ? 0.0 : it->second;
}

std::string unit_name(size_t u) {
  return u == 0 ? "unit 0 (embeddings/head)"
                : "unit " + std::to_string(u) + " (block " + std::to_string(u - 1) + ")";
}

bool loss_detected_at(const Event& e, int64_t step) {
  return std::any_of(e.detections.begin(), e.detections.end(), [&](const Detection& d) {
    return d.step == step && (d.kind == "loss" || d.kind == "nonfinite");
  });
}

// ---- data ---------------------------------------------------------------------------------------

Cause data_cause(const RunRecords& run, const Event& e) {
  const int64_t L = e.loss_step(), from = L - 2;
  Cause c{"data", 0, ""};
  double best = 0;
  for (int64_t rank = 0; rank < run.world(); ++rank) {
    const auto& series = run.ranks[static_cast<size_t>(rank)];
    Baseline be(
        history(series, from, kHistory, [](const StepRecord& r) { return r.batch_entropy; }));
    Baseline br(
        history(series, from, kHistory, [](const StepRecord& r) { return r.batch_repeat_share; }));
    if (!be.ok() || !br.ok()) continue;
    for (int64_t s = from; s <= L; ++s) {
      const StepRecord* r = run.at(rank, s);
      if (!r) continue;
      double drop = 0, rep = 0;
      if (be.z(r->batch_entropy) <= -kDataZ && be.med > 0)
        drop = (be.med - r->batch_entropy) / be.med;
      if (br.z(r->batch_repeat_share) >= kDataZ)
        rep = br.med < 1 ? (r->batch_repeat_share - br.med) / (1 - br.med) : 0;
      if (drop < kDataMinEffect) drop = 0;  // a robust z alone over-reacts when the MAD is ~0
      if (rep < kDataMinEffect) rep = 0;
      const double sc = clamp01(std::max(drop, rep)) * (s == L ? 1.0 : 0.9);
      if (sc > best) {
        best = sc;
        c.evidence =
            "step " + std::to_string(s) + (run.world() > 1 ? " rank " + std::to_string(rank) : "") +
            ": batch entropy " + util::format_number("%.2f", r->batch_entropy) +
            " nats vs median " + util::format_number("%.2f", be.med) + "; repeated-token share " +
            util::format_number("%.2f", r->batch_repeat_share) + " vs median " +
            util::format_number("%.2f", br.med) + "; replay: batch_hash " + hex(r->batch_hash) +
            (s == L ? " (the batch the spiking loss was computed on)"
                    : " (trained on " + std::to_string(L - s) + " step(s) before the spike)");
      }
    }
  }
  c.score = best;
  if (best == 0) {
    const auto& main = run.main();
    Baseline be(history(main, from, kHistory, [](const StepRecord& r) { return r.batch_entropy; }));
    double lo = INFINITY, rep = 0;
    for (int64_t s = from; s <= L; ++s)
      if (const StepRecord* r = run.at(0, s))
        lo = std::min(lo, r->batch_entropy), rep = std::max(rep, r->batch_repeat_share);
    c.evidence = std::isfinite(lo)
                     ? "batches of " + steps_range(from, L) +
                           " look normal: entropy >= " + util::format_number("%.2f", lo) +
                           " nats (median " + util::format_number("%.2f", be.med) +
                           "), repeated-token share <= " + util::format_number("%.2f", rep)
                     : "no batch statistics at " + steps_range(from, L);
  }
  return c;
}

// ---- learning rate ------------------------------------------------------------------------------

// The first LR peak after a rise (the end of a warmup), ignoring jumps; 0 if none.
int64_t warmup_end(const std::vector<StepRecord>& m) {
  for (size_t i = 1; i + 1 < m.size(); ++i) {
    const double a = m[i - 1].lr, b = m[i].lr, c = m[i + 1].lr;
    if (b > m.front().lr && b >= a && c < b && (a <= 0 || b / a < 1.5)) return m[i].step;
  }
  return 0;
}

Cause lr_cause(const RunRecords& run, const Event& e) {
  const int64_t L = e.loss_step();
  Cause c{"lr", 0, ""};
  double best_q = 0;
  for (int64_t s = L - 3; s <= L - 1; ++s) {
    const StepRecord *r = run.at(0, s), *p = run.at(0, s - 1);
    if (!r || !p || !(p->lr > 0)) continue;
    const double q = r->lr / p->lr;
    best_q = std::max(best_q, q);
    if (q < 1.5) continue;
    const double sc = clamp01(std::log(q) / std::log(4.0));
    if (sc > c.score) {
      c.score = sc;
      c.evidence = "LR " + util::format_number("%.2e", r->lr) + " at step " + std::to_string(s) +
                   " is " + times(q) + " step " + std::to_string(s - 1) + "'s " +
                   util::format_number("%.2e", p->lr) +
                   " (a schedule discontinuity); the loss at step " + std::to_string(L) +
                   " is the first after that update";
    }
  }
  if (c.score > 0) return c;
  const int64_t w = warmup_end(run.main());
  const StepRecord* wr = w ? run.at(0, w) : nullptr;
  const std::string warm = wr ? "warmup ended at step " + std::to_string(w) + " (peak LR " +
                                    util::format_number("%.2e", wr->lr) + ")"
                              : "no warmup seen in the LR";
  if (wr && w < L && L - w <= 10) {
    c.score = 0.25 * (1.0 - static_cast<double>(L - w - 1) / 10.0);
    c.evidence =
        warm + ", " + std::to_string(L - w) +
        " step(s) before the spike: the peak LR is a common moment to diverge; no LR jump in " +
        steps_range(L - 3, L - 1);
  } else {
    const StepRecord* r = run.at(0, L - 1);
    c.evidence =
        "no LR jump in " + steps_range(std::max<int64_t>(1, L - 3), L - 1) +
        (best_q > 0 ? " (largest step-to-step ratio " + util::format_number("%.2fx", best_q) + ")"
                    : "") +
        (r ? "; LR " + util::format_number("%.2e", r->lr) : "") + "; " + warm;
  }
  return c;
}

// ---- gradient explosion -------------------------------------------------------------------------

Cause grad_cause(const RunRecords& run, const Event& e) {
  const int64_t L = e.loss_step(), from = L - 3;
  const auto& main = run.main();
  Cause c{"grad", 0, ""};
  Baseline b(history(main, from, kGradHistory, [](const StepRecord& r) { return r.grad_norm; }));
  if (!b.ok(3) || !(b.med > 0)) {
    c.evidence =
        "too few finite grad norms before step " + std::to_string(from) + " to compare with";
    return c;
  }
  double best = 0, best_q = 0;
  int64_t best_s = 0;
  for (int64_t s = from; s <= L; ++s) {
    const StepRecord* r = run.at(0, s);
    if (!r || !std::isfinite(r->grad_norm)) continue;
    const double q = r->grad_norm / b.med;
    double sc = clamp01(std::log10(q) / 2.0);
    if (loss_detected_at(e, s)) sc *= 0.5;
    if (q > best_q) best_q = q, best_s = s;
    best = std::max(best, sc);
  }
  // Trend: least squares of ln(grad_norm) over the 10 steps before L.
  std::vector<double> xs, ys;
  for (int64_t s = L - 10; s <= L - 1; ++s)
    if (const StepRecord* r = run.at(0, s); r && std::isfinite(r->grad_norm) && r->grad_norm > 0)
      xs.push_back(static_cast<double>(s)), ys.push_back(std::log(r->grad_norm));
  double growth = kNaN;
  if (xs.size() >= 4) {
    const double mx = stats::mean(xs), my = stats::mean(ys);
    double sxy = 0, sxx = 0;
    for (size_t i = 0; i < xs.size(); ++i)
      sxy += (xs[i] - mx) * (ys[i] - my), sxx += (xs[i] - mx) * (xs[i] - mx);
    growth = std::exp(sxy / sxx * (xs.back() - xs.front()));
    best = std::max(best, 0.8 * clamp01(std::log10(growth) / 2.0));
  }
  c.score = best;
  if (best_s == 0) {
    c.evidence = "no finite grad norm at " + steps_range(from, L);
    return c;
  }
  const StepRecord* r = run.at(0, best_s);
  c.evidence =
      "grad norm " + util::format_number("%.3g", r->grad_norm) + " at step " +
      std::to_string(best_s) + " = " + times(best_q) + " the median " +
      util::format_number("%.3g", b.med) + " of the " + std::to_string(b.n) + " steps before" +
      (loss_detected_at(e, best_s) ? " (at the loss spike itself: partly its effect)" : "");
  // Per-unit: the largest rise at that step.
  double uq_best = 0;
  size_t u_best = 0;
  double u_val = 0, u_med = 0;
  for (size_t u = 0; u < r->unit_grad_norms.size(); ++u) {
    Baseline ub(history(main, from, kGradHistory, [u](const StepRecord& x) {
      return u < x.unit_grad_norms.size() ? x.unit_grad_norms[u] : kNaN;
    }));
    if (!ub.ok(3) || !(ub.med > 0) || !std::isfinite(r->unit_grad_norms[u])) continue;
    const double uq = r->unit_grad_norms[u] / ub.med;
    if (uq > uq_best) uq_best = uq, u_best = u, u_val = r->unit_grad_norms[u], u_med = ub.med;
  }
  if (uq_best > 0) {
    double total_sq = 0;
    for (double v : r->unit_grad_norms)
      if (std::isfinite(v)) total_sq += v * v;
    c.evidence += "; largest per-layer rise: " + unit_name(u_best) + " " +
                  util::format_number("%.3g", u_val) + " vs median " +
                  util::format_number("%.3g", u_med) + " (" + times(uq_best) + ", " +
                  util::format_number("%.0f", total_sq > 0 ? 100.0 * u_val * u_val / total_sq : 0) +
                  "% of the squared norm)";
  }
  if (std::isfinite(growth))
    c.evidence += "; trend over the 10 steps before: " + util::format_number("%.2fx", growth);
  return c;
}

// ---- numerics -----------------------------------------------------------------------------------

Cause numerics_cause(const RunRecords& run, const Event& e) {
  const int64_t from = e.loss_step() - 3, to = e.last_step;
  Cause c{"numerics", 0, ""};
  std::vector<std::string> found;
  for (int64_t s = from; s <= to; ++s)
    for (int64_t rank = 0; rank < run.world(); ++rank) {
      const StepRecord* r = run.at(rank, s);
      if (!r) continue;
      const std::string where =
          "step " + std::to_string(s) + (run.world() > 1 ? " rank " + std::to_string(rank) : "");
      if (rank == 0 && !std::isfinite(r->loss)) {
        c.score = std::max(c.score, 1.0);
        found.push_back("loss " + util::format_number("%g", r->loss) + " at " + where);
      }
      if (r->nonfinite_grads > 0 || r->overflow) {
        c.score = std::max(c.score, 0.8);
        found.push_back(std::to_string(r->nonfinite_grads) + " non-finite gradient element(s) at " +
                        where + " (grad norm " + util::format_number("%.3g", r->grad_norm) +
                        (r->skipped ? ", update skipped" : "") + ")");
      }
      const StepRecord* p = run.at(rank, s - 1);
      if (p && r->loss_scale < p->loss_scale) {
        c.score = std::max(c.score, 0.3);
        found.push_back("loss scale " + util::format_number("%.3g", p->loss_scale) + " -> " +
                        util::format_number("%.3g", r->loss_scale) + " at " + where);
      }
    }
  if (found.empty()) {
    const StepRecord* r = run.at(0, e.step);
    c.evidence = "no non-finite loss or gradients, overflows or loss-scale drops in " +
                 steps_range(std::max<int64_t>(1, from), to) +
                 (r ? " (loss scale " + util::format_number("%.3g", r->loss_scale) + ")" : "");
  } else {
    for (size_t i = 0; i < found.size() && i < 4; ++i) c.evidence += (i ? "; " : "") + found[i];
    if (found.size() > 4) c.evidence += "; +" + std::to_string(found.size() - 4) + " more";
  }
  return c;
}

// ---- hardware and sync (step time, ranks) -------------------------------------------------------

struct Timing {
  Cause hardware{"hardware", 0, ""}, sync{"sync", 0, ""};
};

Timing timing_causes(const RunRecords& run, const Event& e, double others_max) {
  Timing t;
  const int64_t from = e.step - 1, to = e.last_step + 1;
  const bool slow = e.has("step_time");
  struct RankBase {
    double step = kNaN, own = kNaN, comm = kNaN;
    std::map<std::string, double> phases;
  };
  std::vector<RankBase> base(static_cast<size_t>(run.world()));
  for (int64_t rank = 0; rank < run.world(); ++rank) {
    const auto& series = run.ranks[static_cast<size_t>(rank)];
    auto& b = base[static_cast<size_t>(rank)];
    Baseline st(history(
        series, from, kHistory, [](const StepRecord& r) { return r.step_ms; }, true));
    Baseline ow(history(series, from, kHistory, own_ms, true));
    Baseline cm(history(
        series, from, kHistory, [](const StepRecord& r) { return phase(r, "comm"); }, true));
    b.step = st.med, b.own = ow.med, b.comm = cm.med;
    for (const auto& p : phase_names())
      b.phases[p] = Baseline(history(
                                 series, from, kHistory,
                                 [&p](const StepRecord& r) { return phase(r, p); }, true))
                        .med;
  }
  // The worst own-time excess: which rank, which step.
  double E = 0;
  int64_t r_star = -1, s_star = 0;
  for (int64_t rank = 0; rank < run.world(); ++rank)
    for (int64_t s = from; s <= to; ++s)
      if (const StepRecord* r = run.at(rank, s);
          r && std::isfinite(base[static_cast<size_t>(rank)].own)) {
        const double ex = own_ms(*r) - base[static_cast<size_t>(rank)].own;
        if (ex > E) E = ex, r_star = rank, s_star = s;
      }
  // Where the straggler's time went.
  std::string where;
  if (r_star >= 0) {
    const StepRecord* r = run.at(r_star, s_star);
    const auto& b = base[static_cast<size_t>(r_star)];
    std::string ph;
    double ph_ex = -INFINITY;
    for (const auto& p : phase_names())
      if (p != "comm" && phase(*r, p) - b.phases.at(p) > ph_ex)
        ph_ex = phase(*r, p) - b.phases.at(p), ph = p;
    where = "rank " + std::to_string(r_star) + "'s own time (step minus comm) " +
            util::format_number("%.1f", own_ms(*r)) + " ms at step " + std::to_string(s_star) +
            " vs its median " + util::format_number("%.1f", b.own) + " ms (mostly \"" + ph +
            "\": " + util::format_number("%.1f", phase(*r, ph)) + " ms vs median " +
            util::format_number("%.1f", b.phases.at(ph)) + ")";
  }
  // Sync (a): one rank straggles, the others wait in comm.
  bool asym = false;
  if (run.world() > 1 && r_star >= 0 &&
      E >= (kStragglerRatio - 1) * base[static_cast<size_t>(r_star)].step) {
    double others_own = 0, W = 0;
    int64_t w_rank = -1, w_step = 0;
    double w_comm = 0;
    for (int64_t q = 0; q < run.world(); ++q) {
      if (q == r_star) continue;
      const auto& b = base[static_cast<size_t>(q)];
      if (const StepRecord* r = run.at(q, s_star))
        others_own = std::max(others_own, own_ms(*r) - b.own);
      for (int64_t s : {s_star, s_star + 1})
        if (const StepRecord* r = run.at(q, s); r && phase(*r, "comm") - b.comm > W)
          W = phase(*r, "comm") - b.comm, w_rank = q, w_step = s, w_comm = phase(*r, "comm");
    }
    if (others_own < E / 4) {
      asym = true;
      t.sync.score = 0.5 + 0.5 * clamp01(W / E);
      t.sync.evidence = where + ", while no other rank's own time rose more than " +
                        util::format_number("%.1f", std::max(0.0, others_own)) +
                        " ms above its median";
      if (w_rank >= 0)
        t.sync.evidence +=
            "; rank " + std::to_string(w_rank) + " waited in comm " +
            util::format_number("%.1f", w_comm) + " ms at step " + std::to_string(w_step) +
            " (median " + util::format_number("%.1f", base[static_cast<size_t>(w_rank)].comm) +
            " ms): one rank straggled and the others waited for it at the next collective";
      else
        t.sync.evidence += "; no other rank's comm time rose";
    }
  }
  // Sync (b): local losses disagree.
  if (run.world() > 1) {
    auto spread = [&](int64_t s) {
      double lo = INFINITY, hi = -INFINITY, sum = 0;
      for (int64_t q = 0; q < run.world(); ++q) {
        const StepRecord* r = run.at(q, s);
        if (!r || !std::isfinite(r->local_loss)) return kNaN;
        lo = std::min(lo, r->local_loss), hi = std::max(hi, r->local_loss),
        sum += std::fabs(r->local_loss);
      }
      return sum > 0 ? (hi - lo) / (sum / static_cast<double>(run.world())) : kNaN;
    };
    std::vector<double> hist;
    for (auto it = run.main().rbegin(); it != run.main().rend() && hist.size() < kHistory; ++it)
      if (it->step < e.loss_step() - 1)
        if (double v = spread(it->step); std::isfinite(v)) hist.push_back(v);
    Baseline b(hist);
    double best = 0;
    for (int64_t s = e.loss_step() - 1; s <= e.last_step && b.ok(); ++s) {
      const double v = spread(s);
      if (!std::isfinite(v) || !(b.med > 0)) continue;
      const double ratio = v / b.med;
      if (b.z(v) >= kSpreadZ && ratio >= kSpreadRatio) {
        const double sc = clamp01(std::log10(ratio) / 1.5);
        if (sc > best && sc > t.sync.score) {
          best = sc;
          t.sync.score = sc;
          std::string losses;
          for (int64_t q = 0; q < run.world(); ++q)
            losses += (q ? ", " : "") + util::format_number("%.3f", run.at(q, s)->local_loss);
          t.sync.evidence = "ranks' local losses disagree at step " + std::to_string(s) + ": " +
                            losses + " (relative spread " + util::format_number("%.3f", v) + " = " +
                            times(ratio) + " its median " + util::format_number("%.3f", b.med) +
                            ")";
        }
      }
    }
    if (t.sync.score == 0)
      t.sync.evidence = "no straggler and no local-loss disagreement across the " +
                        std::to_string(run.world()) + " ranks" +
                        (b.ok() ? " (local-loss relative spread median " +
                                      util::format_number("%.3f", b.med) + ")"
                                : "");
  } else {
    t.sync.evidence = "single rank: no cross-rank signal";
  }
  // Hardware: a slow step nobody else explains (a guess).
  if (!slow) {
    const StepRecord* r = run.at(0, e.step);
    t.hardware.evidence =
        "no slow step" +
        (r && std::isfinite(base[0].step)
             ? " (step " + std::to_string(e.step) + ": " + util::format_number("%.1f", r->step_ms) +
                   " ms vs median " + util::format_number("%.1f", base[0].step) + " ms)"
             : "");
  } else {
    const Detection* worst = nullptr;
    for (const auto& d : e.detections)
      if (d.kind == "step_time" && (!worst || d.value / d.median > worst->value / worst->median))
        worst = &d;
    const std::string slow_txt = "step " + std::to_string(worst->step) + " took " +
                                 util::format_number("%.1f", worst->value) + " ms vs median " +
                                 util::format_number("%.1f", worst->median) + " ms (" +
                                 times(worst->value / worst->median) + ") on rank " +
                                 std::to_string(worst->rank);
    if (asym) {
      t.hardware.score = 0.1;
      t.hardware.evidence =
          slow_txt + "; only rank " + std::to_string(r_star) +
          " was slow in its own work, which points at sync (its host may still be the reason)";
    } else {
      t.hardware.score = others_max < 0.3 ? 0.5 : 0.2;
      t.hardware.evidence =
          "a guess: " + slow_txt + (where.empty() ? "" : "; " + where) +
          (run.world() > 1 ? "; no rank asymmetry" : "; single rank") +
          (others_max < 0.3 ? " and no data, LR, gradient or numerics signal" : "") +
          ". The run logs no hardware counters: check the host (throttling, contention, swapping) "
          "and rerun";
    }
  }
  return t;
}

}  // namespace

std::vector<Cause> score_causes(const RunRecords& run, const Event& e) {
  std::vector<Cause> causes{data_cause(run, e), lr_cause(run, e), grad_cause(run, e),
                            numerics_cause(run, e)};
  double others = 0;
  for (const auto& c : causes) others = std::max(others, c.score);
  Timing t = timing_causes(run, e, others);
  causes.push_back(t.hardware);
  causes.push_back(t.sync);
  for (auto& c : causes) c.score = round3(clamp01(c.score));
  sort_causes(causes);
  return causes;
}

std::vector<Diagnosis> diagnose(const RunRecords& run, const SpikeThresholds& t) {
  std::vector<Diagnosis> out;
  for (auto& e : detect_events(run, t)) {
    Diagnosis d{std::move(e), {}};
    d.causes = score_causes(run, d.event);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace lockstep::diagnose
