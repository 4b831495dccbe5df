// How the scaling report's numbers read, in every format (console, Markdown, HTML).
#pragma once

#include <string>

#include "harness/scale/scaling.h"

namespace lockstep::reports::scale_text {

std::string pct(double share, int decimals = 1);       // 0..1 share: "31.2%", "n/a"
std::string times(double x);                           // "1.85x", "unbounded", "n/a"
std::string modes_text(const scale::ScaleResult& r);   // "strong and weak" | "strong" | "weak"
std::string nprocs_text(const scale::ScaleResult& r);  // "1,2,4"
std::string series_caption(const scale::ScaleResult& r, const scale::ScaleSeries& s);
// "from 3 rank counts, R^2 0.991, largest residual 2.1%" (empty without a fit).
std::string fit_quality(const scale::AmdahlFit& f);
// "P = 0.873 (fitted 1.12, clamped), from ..." or "no fit".
std::string fit_summary(const scale::AmdahlFit& f);
// "8 ranks 3.10x, 64 ranks 5.20x (vs N=1); ceiling 6.00x" (empty without a fit).
std::string prediction_text(const scale::ScaleResult& r, const scale::AmdahlFit& f);

}  // namespace lockstep::reports::scale_text
