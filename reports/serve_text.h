// Serving results as text (issue 37): the lane table (console and Markdown) and a comparison's
// checks. Renderers only: the figures come from harness/serve.
#pragma once

#include <string>
#include <vector>

#include "harness/serve/figures.h"
#include "harness/serve/serve_diagnosis.h"
#include "harness/serve/verdict.h"

namespace lockstep::reports {

// One row per lane ("all" first): requests, throughput, padding, P50/P99/P99.9 (with P99's CI),
// queue wait vs service, batch, SLO attainment, goodput. Markdown when `markdown`.
std::string serve_table(const std::vector<serve::Figures>& figures, bool markdown);
// Its header and rows as text cells (what serve_table lays out; report.html too).
std::vector<std::string> serve_table_header();
std::vector<std::vector<std::string>> serve_table_rows(const std::vector<serve::Figures>& figures);

// The comparison: verdict, checks, both arms' tables, where the tail came from.
std::string serve_compare_markdown(const std::vector<serve::ServeCheck>& checks, bool passed,
                                   const std::vector<serve::Figures>& baseline,
                                   const std::vector<serve::Figures>& variant,
                                   const serve::TailOrigin& baseline_tail,
                                   const serve::TailOrigin& variant_tail, int windows);

// `diagnose` on a serving run: per arm, its P99 against the SLO, where the tail came from (cause,
// lane, queue vs service) and the remedy. Markdown when `markdown`.
std::string serve_diagnosis_text(const std::vector<serve::ServeFinding>& findings, bool markdown);

}  // namespace lockstep::reports
