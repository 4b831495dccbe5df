// The --out folder of `lockstep compare`: a folder that already holds a comparison is refused
// (exit 2, nothing touched), as `lockstep run` refuses a folder that holds a run, unless --force
// asks for it to be replaced. A new or empty folder, or one holding only other files, is used as
// it is.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lockstep::cli {

// What a comparison writes into its folder: the report files (reports::write_reports) and arms/.
std::vector<std::string> comparison_outputs();

// The entries of comparison_outputs() present in `dir` (report.json, arms/, ...); empty when the
// folder holds no earlier comparison (or does not exist).
std::vector<std::string> earlier_comparison(const std::filesystem::path& dir);

// Throws UsageError ("--out DIR already holds a comparison (report.json, arms/); ...") when `dir`
// holds an earlier comparison and `force` is false. Touches nothing.
void refuse_earlier_comparison(const std::string& dir, bool force);

// --force: removes the earlier comparison's outputs (and only those) from `dir`, so its old
// arms/*-seed* and timing folders cannot stand beside the new ones. Returns what it removed.
std::vector<std::string> remove_earlier_comparison(const std::filesystem::path& dir);

}  // namespace lockstep::cli
