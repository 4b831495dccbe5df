// The registry of config sections. Each section is declared and validated by the component that
// owns it; this list only fixes which sections exist and the order `config show` prints them.
// It lives above every component (harness/config/schema.h declares it): the config layer itself
// knows no component.
#include "harness/config/schema.h"
#include "harness/dist/parallel_config.h"
#include "harness/external/external_config.h"
#include "harness/vocab/gate_policy.h"
#include "harness/registry/catalog.h"
#include "harness/vocab/checkpoint_config.h"
#include "harness/vocab/fault_config.h"
#include "harness/vocab/optim_config.h"
#include "harness/vocab/profile_config.h"
#include "harness/vocab/run_config.h"
#include "harness/vocab/serve_config.h"
#include "harness/vocab/stability_config.h"
#include "variants/variant_config.h"
#include "workloads/data_config.h"
#include "workloads/model_config.h"

namespace lockstep::config {

const std::vector<const SectionSchema*>& all_sections() {
  // Order matters for finalize: a section may read keys that earlier sections resolved.
  static const std::vector<const SectionSchema*> sections{
      &run_schema(),
      &external::external_schema(),  // before [profile]: an external arm profiles nothing
      &workloads::model_schema(),
      &dist::parallel_schema(),
      &workloads::data_schema(),
      &train::optim_schema(),
      &variants::precision_schema(),
      &variants::attention_schema(),
      &train::stability_schema(),
      &train::checkpoint_schema(),
      &train::profile_schema(),
      &train::faults_schema(),
      &gate::gate_schema(),
      &registry::plugins_schema(),
      &serve::serve_schema(),  // after [model]: lanes fit model.seq_len
  };
  return sections;
}

}  // namespace lockstep::config
