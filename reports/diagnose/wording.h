// How a diagnosis reads, in every format (console, Markdown, HTML).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/diagnose/report.h"

namespace lockstep::reports::diagnose_text {

// "step 121: loss 4.1234 vs trend 2.3456 (+76%, robust z 9.1)", ...
std::string detection_text(const diagnose::Detection& d, int64_t world);
// The detections of an event in a few lines (at most 3 per kind, then a count).
std::vector<std::string> detection_lines(const diagnose::Event& e, int64_t world);
// "RUN_DIR (name, 200 steps, 2 ranks, status ok)"
std::string header_line(const diagnose::DiagnoseReport& r);
// "3 events", or for a run too short to judge a loss: "too short to judge" (not "0 events").
std::string events_text(const diagnose::DiagnoseReport& r);
// Why a clean run has no event: the thresholds it stayed under (or why it was too short to judge).
std::string no_event_text(const diagnose::DiagnoseReport& r);

}  // namespace lockstep::reports::diagnose_text
