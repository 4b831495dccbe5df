// [external]: an arm trained by any program instead of Lockstep's own trainer. The section is owned
// here; the run itself is harness/external/external_run.h. An arm is external when
// external.command is not empty.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/config/config.h"

namespace lockstep::external {

struct ExternalConfig {
  std::vector<std::string> command;          // argv, placeholders not yet expanded
  std::string workdir;                       // absolute (finalize)
  std::map<std::string, std::string> env;    // added to the trainer's environment
  std::optional<double> flops_per_token;     // for MFU; unset: MFU unknown
  double timeout_s = 0;                      // the whole run; 0 = no limit

  static ExternalConfig from(const config::Config& cfg);
};

bool is_external(const config::Config& cfg);

const config::SectionSchema& external_schema();

}  // namespace lockstep::external
