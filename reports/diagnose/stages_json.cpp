// The stage split as JSON (`lockstep stages --json`).
#include "reports/diagnose/reporters.h"

namespace lockstep::reports {

using nlohmann::json;

json stages_json(const diagnose::StagePlan& p) {
  auto split = [&](const diagnose::Split& s) {
    json stages = json::array();
    for (const auto& st : s.stages)
      stages.push_back({{"units", st.units()},
                        {"first_block", st.first_block},
                        {"last_block", st.last_block},
                        {"blocks", st.last_block - st.first_block + 1},
                        {"embedding", st.has_embedding},
                        {"head", st.has_head},
                        {"forward_ms", st.forward_ms},
                        {"backward_ms", st.backward_ms},
                        {"ms", st.ms()}});
    return json{{"stages", stages},
                {"max_ms", s.max_ms},
                {"mean_ms", s.mean_ms},
                {"imbalance_pct", s.imbalance_pct},
                {"step_ms", s.step_ms},
                {"bubble_ms", s.bubble_ms},
                {"bubble_share", s.bubble_share},
                {"efficiency", s.efficiency}};
  };
  return json{{"stages", p.stages},
              {"microbatches", p.microbatches},
              {"optimal", split(p.optimal)},
              {"naive", split(p.naive)},
              {"speedup", p.speedup},
              {"bubble_formula",
               "step = (m + P - 1) * max_stage / m; bubble_share = (P - 1) / (m + P - 1)"}};
}

std::string StagesJsonReporter::render(const diagnose::StagePlan& p) const {
  return stages_json(p).dump(2) + "\n";
}

}  // namespace lockstep::reports
