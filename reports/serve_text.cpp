#include "reports/serve_text.h"

#include <cmath>
#include <cstdio>

namespace lockstep::reports {
namespace {

std::string ms(double x) {
  if (!std::isfinite(x)) return "inf";
  char b[32];
  std::snprintf(b, sizeof b, x < 10 ? "%.2f" : "%.1f", x);
  return b;
}

std::string cell(const serve::Quantile& q) {
  return ms(q.ms) + (q.is_max ? " (max)" : "");
}

}  // namespace

std::vector<std::string> serve_table_header() {
  return {"lane",     "requests",  "served/s",    "tokens/s", "padding",    "P50 ms",    "P99 ms",
          "P99 95% CI", "P99.9 ms", "queue P99", "service P99", "batch", "within SLO", "goodput/s"};
}

std::vector<std::vector<std::string>> serve_table_rows(const std::vector<serve::Figures>& figures) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& f : figures) {
    char b[14][64];
    std::snprintf(b[0], 64, "%s", f.lane.c_str());
    std::snprintf(b[1], 64, "%lld%s", static_cast<long long>(f.offered),
                  f.unserved || f.rejected
                      ? (" (" + std::to_string(f.unserved) + " unserved, " +
                         std::to_string(f.rejected) + " rejected)").c_str()
                      : "");
    std::snprintf(b[2], 64, "%.1f", f.throughput_rps);
    std::snprintf(b[3], 64, "%.0f", f.tokens_per_s);
    std::snprintf(b[4], 64, "%.1f%%", 100 * f.padding_share);
    std::snprintf(b[5], 64, "%s", cell(f.p50).c_str());
    std::snprintf(b[6], 64, "%s", cell(f.p99).c_str());
    std::snprintf(b[7], 64, "[%s, %s]", ms(f.p99.lo_ms).c_str(), ms(f.p99.hi_ms).c_str());
    std::snprintf(b[8], 64, "%s", cell(f.p999).c_str());
    std::snprintf(b[9], 64, "%s", ms(f.queue_p99_ms).c_str());
    std::snprintf(b[10], 64, "%s", ms(f.service_p99_ms).c_str());
    std::snprintf(b[11], 64, "%.1f", f.mean_batch);
    std::snprintf(b[12], 64, "%.2f%%", 100 * f.slo_attainment);
    std::snprintf(b[13], 64, "%.1f", f.goodput_rps);
    rows.emplace_back(std::begin(b), std::end(b));
  }
  return rows;
}

std::string serve_table(const std::vector<serve::Figures>& figures, bool markdown) {
  std::string out;
  const auto head = serve_table_header();
  const auto rows = serve_table_rows(figures);
  if (markdown) {
    for (const auto& h : head) out += "| " + h + " ";
    out += "|\n";
    for (size_t i = 0; i < 14; ++i) out += "|---";
    out += "|\n";
    for (const auto& r : rows) {
      for (const auto& c : r) out += "| " + c + " ";
      out += "|\n";
    }
    return out;
  }
  std::vector<size_t> w(14);
  for (size_t i = 0; i < 14; ++i) {
    w[i] = head[i].size();
    for (const auto& r : rows) w[i] = std::max(w[i], r[i].size());
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t i = 0; i < r.size(); ++i)
      s += (i ? "  " : "") + std::string(i ? w[i] - r[i].size() : 0, ' ') + r[i] +
           std::string(i ? 0 : w[i] - r[i].size(), ' ');
    return s + "\n";
  };
  out += line(head);
  for (const auto& r : rows) out += line(r);
  return out;
}

std::string serve_compare_markdown(const std::vector<serve::ServeCheck>& checks, bool passed,
                                   const std::vector<serve::Figures>& baseline,
                                   const std::vector<serve::Figures>& variant,
                                   const serve::TailOrigin& baseline_tail,
                                   const serve::TailOrigin& variant_tail, int windows) {
  std::string out = std::string("## Serving comparison: ") + (passed ? "PASS" : "FAIL") + "\n\n";
  out += std::to_string(windows) + " window pairs, taken in turns (AB, BA, ...), the same "
         "arrivals in each pair.\n\n| check | verdict | detail |\n|---|---|---|\n";
  for (const auto& c : checks)
    out += "| " + c.name + " | " + compare::to_string(c.verdict) + " | " + c.detail + " |\n";
  out += "\n### Baseline\n\n" + serve_table(baseline, true) + "\nTail: " + baseline_tail.sentence +
         ".\n\n### Variant\n\n" + serve_table(variant, true) + "\nTail: " + variant_tail.sentence +
         ".\n";
  return out;
}

std::string serve_diagnosis_text(const std::vector<serve::ServeFinding>& findings, bool markdown) {
  std::string out = markdown ? "## Serving diagnosis\n\n" : "serving diagnosis\n";
  for (const auto& f : findings) {
    char p99[64], rest[256];
    if (std::isfinite(f.p99_ms)) std::snprintf(p99, sizeof p99, "%.1f ms", f.p99_ms);
    else std::snprintf(p99, sizeof p99, "never served");
    std::snprintf(rest, sizeof rest, ": P99 %s, %.1f%% within the %g ms SLO; tail %lld requests, "
                  "%.0f%% queue wait", p99, 100 * f.slo_attainment, f.slo_ms,
                  static_cast<long long>(f.tail_requests), 100 * f.queue_share);
    const std::string name = f.arm + " (" + f.config + ")";
    out += markdown ? "- **" + name + "**" : "  " + name;
    out += rest;
    if (!f.lane.empty()) out += ", mostly lane \"" + f.lane + "\"";
    out += "\n";
    out += (markdown ? "  " : "    ") + f.cause + ": " + f.advice + "\n";
  }
  return out;
}

}  // namespace lockstep::reports
