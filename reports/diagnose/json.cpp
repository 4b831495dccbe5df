// The diagnosis as JSON: diagnosis.json and `lockstep diagnose --json` (the schema:
// reports/diagnose/reporters.h).
#include <cmath>

#include "harness/runs/run_json.h"
#include "reports/diagnose/reporters.h"

namespace lockstep::reports {

using nlohmann::json;

json diagnosis_json(const diagnose::DiagnoseReport& r) {
  json spikes = json::array();
  for (const auto& d : r.diagnoses) {
    json causes = json::array();
    for (const auto& c : d.causes)
      causes.push_back({{"cause", c.cause}, {"score", c.score}, {"evidence", c.evidence}});
    json dets = json::array();
    for (const auto& x : d.event.detections)
      dets.push_back({{"kind", x.kind},
                      {"step", x.step},
                      {"rank", x.rank},
                      {"value", runs::num(x.value)},
                      {"median", runs::num(x.median)},
                      {"z", std::isinf(x.z) ? json(x.z > 0 ? "inf" : "-inf") : runs::num(x.z)}});
    spikes.push_back({{"step", d.event.step},
                      {"causes", causes},
                      {"last_step", d.event.last_step},
                      {"kind", d.event.kinds()},
                      {"explained", d.explained()},
                      {"detections", dets}});
  }
  const auto& m = r.run.main();
  const auto& t = r.thresholds;
  return json{{"spikes", spikes},
              {"run", r.run_dir},
              {"name", r.name},
              {"status", r.status},
              {"steps", m.empty() ? 0 : m.back().step},
              {"ranks", r.run.world()},
              {"loss_judged_from", diagnose::loss_coverage(r.run, t).first_judged},  // 0: none
              {"too_short", diagnose::too_short_text(r.run, t)},                   // "": judged
              {"thresholds",
               {{"loss_window", t.loss_window},
                {"loss_min_history", t.loss_min_history},
                {"loss_noise_window", t.loss_noise_window},
                {"loss_sustained_z", t.loss_sustained_z},
                {"loss_sustained_rise", t.loss_sustained_rise},
                {"loss_z", t.loss_z},
                {"loss_min_rise", t.loss_min_rise},
                {"time_window", t.time_window},
                {"time_z", t.time_z},
                {"time_ratio", t.time_ratio},
                {"grad_window", t.grad_window},
                {"grad_ratio", t.grad_ratio},
                {"grad_z", t.grad_z},
                {"merge_gap", t.merge_gap}}}};
}

std::string DiagnosisJsonReporter::render(const diagnose::DiagnoseReport& r) const {
  return diagnosis_json(r).dump(2) + "\n";
}

}  // namespace lockstep::reports
