// Lockstep: does this training optimization really help, and is it still the same math?
#include "harness/cli/cli.h"

int main(int argc, char** argv) {
  return lockstep::cli::main(argc, argv);
}
