#include "reports/scale/wording.h"

#include <cmath>

#include "harness/util/format.h"
#include "reports/text.h"

namespace lockstep::reports::scale_text {

using scale::AmdahlFit;
using scale::ScalePoint;
using scale::ScaleResult;
using scale::ScaleSeries;
using text::fixed;

std::string pct(double share, int decimals) {
  return std::isfinite(share) ? fixed(100 * share, decimals) + "%" : "n/a";
}
std::string times(double x) {
  return std::isfinite(x) ? fixed(x, 2) + "x" : (x > 0 ? "unbounded" : "n/a");
}

std::string modes_text(const ScaleResult& r) {
  return r.mode == scale::Mode::Both ? "strong and weak" : scale::to_string(r.mode);
}

std::string nprocs_text(const ScaleResult& r) {
  std::string s;
  for (int n : r.nprocs) s += (s.empty() ? "" : ",") + std::to_string(n);
  return s;
}

std::string series_caption(const ScaleResult& r, const ScaleSeries& s) {
  if (s.mode == scale::Mode::Strong)
    return "strong scaling: global batch " + std::to_string(r.base_batch) + " at every N";
  return "weak scaling: global batch " + std::to_string(r.base_batch) + " x N (" +
         std::to_string(r.base_batch) + " per rank)";
}

// "from 3 rank counts, R^2 0.991, largest residual 2.1%" (empty without a fit).
std::string fit_quality(const AmdahlFit& f) {
  if (!f.ok) return "";
  std::string s = "from " + std::to_string(f.sizes) + " rank counts";
  if (std::isfinite(f.r2)) s += ", R^2 " + fixed(f.r2, 3);
  if (std::isfinite(f.max_rel_residual)) s += ", largest residual " + pct(f.max_rel_residual);
  if (f.poor) s += ", POOR FIT";
  return s;
}

// "P = 0.873 (fitted 1.12, clamped), from ..." or "no fit".
std::string fit_summary(const AmdahlFit& f) {
  if (!f.ok) return "no fit";
  std::string s = "P = " + fixed(f.p, 3);
  if (f.clamped)
    s += " (fitted " +
         (std::isfinite(f.p_raw) ? fixed(f.p_raw, 3) : std::string(f.p_raw > 0 ? "+inf" : "-inf")) +
         ", clamped)";
  return s + ", " + fit_quality(f);
}

std::string prediction_text(const ScaleResult& r, const AmdahlFit& f) {
  if (!f.ok) return "";
  std::string s;
  for (double n : r.predict_at)
    s +=
        (s.empty() ? "" : ", ") + util::format_number("%.10g", n) + " ranks " + times(f.predict(n));
  s += " (vs N=" + util::format_number("%.10g", f.ref_n) + "); ceiling " +
       times(f.max_speedup() / scale::amdahl_speedup(f.p, f.ref_n));
  return s;
}

}  // namespace lockstep::reports::scale_text
