#include "reports/diagnose/wording.h"

#include <map>

#include "harness/util/format.h"

namespace lockstep::reports::diagnose_text {

using diagnose::Detection;
using diagnose::DiagnoseReport;
using diagnose::Event;
using diagnose::SpikeThresholds;

std::string detection_text(const Detection& d, int64_t world) {
  const std::string rank = world > 1 ? " on rank " + std::to_string(d.rank) : "";
  if (d.kind == "nonfinite") return "step " + std::to_string(d.step) + ": the loss is non-finite";
  if (d.kind == "loss")
    return "step " + std::to_string(d.step) + ": loss " + util::format_number("%.4f", d.value) +
           " vs trend " + util::format_number("%.4f", d.median) + " (" +
           util::format_number("%+.0f%%", 100 * (d.value / d.median - 1)) + ", robust z " +
           util::format_number("%.1f", d.z) + ")";
  if (d.kind == "grad_norm")
    return "step " + std::to_string(d.step) + ": grad norm " +
           util::format_number("%.3g", d.value) + " vs median " +
           util::format_number("%.3g", d.median) + " (" +
           util::format_number("%.0fx", d.value / d.median) + ")";
  return "step " + std::to_string(d.step) + rank + ": step time " +
         util::format_number("%.1f", d.value) + " ms vs median " +
         util::format_number("%.1f", d.median) + " ms (" +
         util::format_number("%.1fx", d.value / d.median) + ")";
}

std::vector<std::string> detection_lines(const Event& e, int64_t world) {
  std::vector<std::string> out;
  std::map<std::string, int> per_kind;
  for (const auto& d : e.detections) {
    int n = ++per_kind[d.kind];
    if (n <= 3) out.push_back(detection_text(d, world));
  }
  for (const auto& [kind, n] : per_kind)
    if (n > 3) out.push_back("+" + std::to_string(n - 3) + " more " + kind + " detection(s)");
  return out;
}

std::string header_line(const DiagnoseReport& r) {
  const auto& m = r.run.main();
  std::string s = r.run_dir.empty() ? "run" : r.run_dir;
  s += " (" + (r.name.empty() ? std::string() : r.name + ", ") +
       std::to_string(m.empty() ? 0 : m.back().step) + " steps, " + std::to_string(r.run.world()) +
       (r.run.world() == 1 ? " rank" : " ranks") +
       (r.status.empty() ? "" : ", status " + r.status) + ")";
  return s;
}

std::string events_text(const DiagnoseReport& r) {
  const size_t n = r.diagnoses.size();
  if (n == 0 && diagnose::loss_coverage(r.run, r.thresholds).none()) return "too short to judge";
  return std::to_string(n) + (n == 1 ? " event" : " events");
}

std::string no_event_text(const DiagnoseReport& r) {
  const auto& t = r.thresholds;
  if (std::string s = diagnose::too_short_text(r.run, t); !s.empty()) return s;
  const auto f = [](const char* spec, double x) { return util::format_number(spec, x); };
  return "no events: no non-finite loss, no loss jump (robust z " + f("%g", t.loss_z) + ", +" +
         f("%g", 100 * t.loss_min_rise) + "%) or lasting rise (+" +
         f("%g", 100 * t.loss_sustained_rise) + "% for two steps) above its local trend from step " +
         std::to_string(diagnose::loss_coverage(r.run, t).first_judged) + " on, no grad norm " +
         f("%g", t.grad_ratio) + "x its median and no step " + f("%g", t.time_ratio) +
         "x slower than usual";
}

}  // namespace lockstep::reports::diagnose_text
