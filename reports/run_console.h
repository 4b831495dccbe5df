// The end-of-run lines `lockstep run` prints to the terminal.
#pragma once

#include <filesystem>
#include <ostream>

#include "harness/vocab/records.h"

namespace lockstep::reports {

void print_run_summary(std::ostream& os, const RunSummary& s, const std::filesystem::path& out_dir);

// "12.3 MiB" etc.
std::string human_bytes(double bytes);

}  // namespace lockstep::reports
