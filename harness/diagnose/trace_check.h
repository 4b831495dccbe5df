// Validation of Chrome trace-event JSON (the "Trace Event Format" read by chrome://tracing and
// Perfetto), for the per-rank traces a run writes (trace.rank<r>.json). `lockstep trace-check
// FILE...` runs it from the command line (exit 0 valid, 1 invalid) so CI can use it.
//
// Rules (each violation is one error naming the file and the event's index):
//   * the document is an array of events, or an object with a "traceEvents" array;
//   * every event is an object with "ph" (a one-letter phase of the spec), "name" (string) and
//     "pid"; every event except metadata ("M") also has "tid" and a numeric "ts" (the spec makes
//     ts optional for metadata events); pid and tid are numbers or strings;
//   * complete events ("X") have a numeric "dur" >= 0;
//   * duration events "B"/"E" balance per (pid, tid) in file order: an "E" closes the latest open
//     "B" of its thread (with the same name when the "E" names one, and not earlier in time); no
//     "B" is left open at the end;
//   * across the files of one check: each file uses exactly one pid, and no two files share one.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lockstep::diagnose {

// Errors in one parsed document; `where` prefixes each (a file name).
std::vector<std::string> check_trace(const nlohmann::json& doc, const std::string& where = "trace");

// Errors in a set of trace files (one per rank): each file on its own, then one pid per file and
// distinct pids. An unreadable or non-JSON file is an error, not an exception.
std::vector<std::string> check_trace_files(const std::vector<std::filesystem::path>& files);

}  // namespace lockstep::diagnose
