// `run --export-losses FILE`, second half (issue 54): the noise envelope measured where the golden
// file is exported. K more runs of the same config (the run's [gate] envelope_runs) whose weights
// get rounding-sized noise each step (faults.weight_rounding_noise = the unit roundoff of the
// config's compute dtype, or [gate] envelope_noise; faults.noise_seed = 1..K), as `compare`'s
// envelope runs; E(s) from their losses against the exported curve (harness/compare/envelope.h),
// written into FILE as its third column (format 2, harness/compare/golden_file.h). The runs go in
// OUT/envelope/noise<k>/. `--no-envelope` skips this.
#pragma once

#include <filesystem>

#include "harness/config/config.h"
#include "harness/runner.h"

namespace lockstep {

// After the run exported FILE: adds the envelope to it. Returns kExitPass, or kExitRunFailed when
// a perturbed run failed (FILE is left as exported, without an envelope, and stderr says why).
int export_envelope(const RunRequest& req, const config::Config& cfg,
                    const std::filesystem::path& out);

}  // namespace lockstep
