#include "harness/compare/conformance_stage.h"

#include <filesystem>

#include "harness/util/files.h"
#include "harness/util/process.h"

namespace lockstep::compare {
namespace fs = std::filesystem;

ConformanceOutcome run_conformance(const ComparisonPlan& plan, const CompareRequest& req) {
  ConformanceOutcome o;
  const fs::path dir = fs::path(plan.out_dir) / "arms";
  fs::create_directories(dir);
  const fs::path json = dir / "conformance.json", log = dir / "conformance.log";
  fs::remove(json);
  std::vector<std::string> argv{util::self_exe(), "conformance", req.variant.config, "--json",
                                json.string(), "--quiet"};
  for (const auto& s : req.variant.sets) argv.push_back("--set"), argv.push_back(s);
  if (req.log) req.log("kernel conformance: the variant's kernels against their slots' exact math");
  try {
    const auto st = util::wait_for(util::spawn(argv, log, "conformance"), 1800);
    if (st.code != 0 && st.code != 1)
      o.failure = "lockstep conformance " + st.describe() + ": " + util::last_nonempty_line(log) +
                  " (log: " + log.string() + ")";
    else
      o.report = read_conformance(json);
  } catch (const std::exception& e) {
    o.failure = e.what();
  }
  return o;
}

}  // namespace lockstep::compare
