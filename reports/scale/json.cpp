// The scaling report as report.json (schema_version 1; non-finite numbers are null).
#include <cmath>

#include "harness/runs/run_json.h"
#include "reports/scale/reporters.h"

namespace lockstep::reports {
namespace {

using nlohmann::json;
using runs::num;
using scale::AmdahlFit;
using scale::ScalePoint;
using scale::ScaleResult;

json fit_json(const ScaleResult& r, const AmdahlFit& f) {
  json j{{"ok", f.ok},
         {"p", num(f.p)},
         {"p_raw", num(f.p_raw)},
         {"clamped", f.clamped},
         {"superlinear", f.superlinear},
         {"slowdown", f.slowdown},
         {"poor", f.poor},
         {"a", num(f.a)},
         {"b", num(f.b)},
         {"r2", num(f.r2)},
         {"max_rel_residual", num(f.max_rel_residual)},
         {"reference_n", f.ref_n},
         {"points", f.points},
         {"sizes", f.sizes},
         {"notes", f.notes},
         {"model",
          "speed-up(N) = 1 / ((1 - P) + P / N); least squares of 1/speed-up = a + b/N, P = b / (a "
          "+ b)"}};
  j["max_speedup_vs_one"] = f.ok && f.p >= 1 ? json("unbounded") : num(f.max_speedup());
  json preds = json::array();
  for (double n : r.predict_at) {
    const double s = f.predict(n);
    preds.push_back({{"n", n},
                     {"speedup", num(s)},
                     {"speedup_vs_one", num(f.predict_vs_one(n))},
                     {"efficiency", num(f.ok ? s / (n / f.ref_n) : NAN)}});
  }
  j["predictions"] = preds;
  return j;
}

json point_json(const ScalePoint& p) {
  json reps = json::array();
  for (double x : p.tokens_per_sec_repeats) reps.push_back(num(x));
  return json{{"n", p.n},
              {"global_batch", p.global_batch},
              {"micro_batch_per_rank", p.micro_batch},
              {"status", to_string(p.status)},
              {"note", p.note},
              {"shared_with", p.shared_with},
              {"tokens_per_sec", num(p.tokens_per_sec)},
              {"tokens_per_sec_repeats", reps},
              {"speedup", num(p.speedup)},
              {"efficiency", num(p.efficiency)},
              {"comm_share", num(p.comm_share)},
              {"step_ms_p50", num(p.step_ms_p50)},
              {"run_dirs", p.run_dirs}};
}

}  // namespace

nlohmann::json scale_json(const scale::ScaleResult& r) {
  json j;
  j["tool"] = "lockstep scale";
  j["schema_version"] = 1;
  j["config"] = r.config;
  j["name"] = r.name;
  j["mode"] = scale::to_string(r.mode);
  j["nprocs"] = r.nprocs;
  j["repeats"] = r.repeats;
  j["steps_timed"] = r.steps_timed;
  j["stop_after"] = r.stop_after;
  j["warmup_steps"] = r.warmup_steps;
  j["profile_window"] = r.profile_window;
  j["base_batch"] = r.base_batch;
  j["device"] = r.device;
  j["threads_per_rank"] = r.threads_per_rank;
  j["host"] = {{"cores", r.host_cores},
               {"load_average", num(r.load_average)},
               {"shares_cores", r.shares_cores}};
  json series = json::array();
  for (const auto& s : r.series) {
    json pts = json::array();
    for (const auto& p : s.points) pts.push_back(point_json(p));
    series.push_back({{"mode", scale::to_string(s.mode)},
                      {"reference_n", s.ref_n},
                      {"points", pts},
                      {"amdahl", fit_json(r, s.fit)}});
  }
  j["series"] = series;
  if (const auto* h = r.headline()) {
    j["amdahl"] = fit_json(r, h->fit);
    j["amdahl"]["series"] = scale::to_string(h->mode);
  } else {
    j["amdahl"] = nullptr;
  }
  j["warnings"] = r.warnings;
  j["notes"] = r.notes;
  j["failures"] = r.failures;
  j["exit_code"] = r.exit_code;
  j["wall_seconds"] = r.wall_seconds;
  j["out_dir"] = r.out_dir;
  j["environment"] = r.env;
  return j;
}

std::string ScaleJsonReporter::render(const scale::ScaleResult& r) const {
  return scale_json(r).dump(2) + "\n";
}

}  // namespace lockstep::reports
