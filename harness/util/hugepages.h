// Run-to-run performance stability: glibc's malloc is told to advise transparent huge pages for
// its heap (the glibc.malloc.hugetlb=1 tunable). Without it, whether the model's buffers land on
// huge pages depends on where malloc happens to place them, which shifts with anything that
// touches the heap, even a config override: measured on the CI machine, the same computation's
// forward took 6.5 ms/step in one process and 8.1 ms in another, a 10% tokens/s difference that
// no optimization caused. With the tunable every process measured 27.4k-28.9k tokens/s.
#pragma once

namespace lockstep::util {

// Re-executes this binary with the tunable added to GLIBC_TUNABLES when it is not set yet
// (read by glibc only at start-up). Returns (without re-executing) when it is already set, when
// LOCKSTEP_NO_HUGEPAGES is set, or when the exec fails.
void ensure_malloc_hugepages(char** argv);

}  // namespace lockstep::util
