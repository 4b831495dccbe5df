// Lockstep: does this training optimization really help, and is it still the same math?
#include "harness/cli/cli.h"
#include "harness/util/hugepages.h"

int main(int argc, char** argv) {
  lockstep::util::ensure_malloc_hugepages(argv);  // stable timings from one process to the next
  return lockstep::cli::main(argc, argv);
}
