// Lockstep: does this training optimization really help, and is it still the same math?
#include "harness/cli/cli.h"
#include "harness/kernels/install.h"
#include "harness/util/cpu_capability.h"
#include "harness/util/malloc_tuning.h"

int main(int argc, char** argv) {
  lockstep::util::ensure_aten_cpu_capability();  // before LibTorch runs an operator, and inherited
  lockstep::util::ensure_malloc_tuning(argv);    // stable, fault-free timings (see the header)
  lockstep::registry::install();                 // built-ins and the plugin loader
  return lockstep::cli::main(argc, argv);
}
