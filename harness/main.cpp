// Lockstep: does this training optimization really help, and is it still the same math?
#include <unistd.h>  // environ

#include "harness/cli/cli.h"
#include "harness/kernels/install.h"
#include "harness/util/cpu_capability.h"
#include "harness/util/malloc_tuning.h"
#include "harness/util/process.h"

namespace {

// The malloc re-exec (util::ensure_malloc_tuning) runs from the executable's .preinit_array: after
// the dynamic loader has mapped the libraries but before any of their initializers, so the
// process that re-executes never initializes LibTorch (Debian's pulls 287 libraries; measured on
// the CI machine: `lockstep --version` took 1.4 s of CPU re-executing from main, 0.65 s once
// started with the tunables already set). glibc calls preinit functions with (argc, argv, envp);
// `environ` is still null there (libc sets it in its own initializer, later, to the same envp).
void reexec_before_library_init(int, char** argv, char** envp) {
  if (environ == nullptr) environ = envp;
  lockstep::util::die_with_parent();  // a child run dies with the compare that started it
  lockstep::util::ensure_malloc_tuning(argv);
}
__attribute__((section(".preinit_array"), used)) void (*const lockstep_preinit)(int, char**,
                                                                                char**) =
    reexec_before_library_init;

}  // namespace

int main(int argc, char** argv) {
  lockstep::util::ensure_aten_cpu_capability();  // before LibTorch runs an operator, and inherited
  lockstep::util::ensure_malloc_tuning(argv);    // a no-op after the preinit re-exec (a fallback)
  lockstep::registry::install();                 // built-ins and the plugin loader
  return lockstep::cli::main(argc, argv);
}
