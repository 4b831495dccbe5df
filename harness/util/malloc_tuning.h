// Run-to-run performance stability and speed on CPU: glibc's malloc is tuned at start-up the way
// a training process uses memory (the same large buffers allocated and freed every step).
//
// - glibc.malloc.hugetlb=1: malloc advises transparent huge pages for its heap. Without it,
//   whether the model's buffers land on huge pages depends on where malloc happens to place them,
//   which shifts with anything that touches the heap, even a config override: measured on the CI
//   machine, the same computation's forward took 6.5 ms/step in one process and 8.1 ms in another,
//   a 10% tokens/s difference that no optimization caused.
// - glibc.malloc.mmap_threshold=32 MiB and a trim threshold that never trims: activations up to
//   32 MiB come from the heap and freed memory stays there for the next step, as a caching
//   allocator keeps it on GPUs. With glibc's defaults each step handed ~100 MB back to the kernel
//   and faulted it in again (about 2,000 huge-page faults and their zeroing in a 35-step run at
//   d_model 256, 1.8 points of MFU); with these, ~190 faults, all in the first steps.
#pragma once

#include <string>

namespace lockstep::util {

// GLIBC_TUNABLES with Lockstep's malloc settings added to `current` (the user's value, kept; a
// tunable the user set is never overridden). Equal to `current` when nothing is missing.
std::string with_malloc_tunables(const std::string& current);

// Whether the user turned the malloc settings off (LOCKSTEP_NO_MALLOC_TUNING or
// LOCKSTEP_NO_HUGEPAGES set).
bool malloc_tuning_disabled();

// Re-executes this binary with with_malloc_tunables(GLIBC_TUNABLES) when that adds something
// (glibc reads tunables only at start-up). Returns (without re-executing) when nothing is missing,
// when LOCKSTEP_NO_MALLOC_TUNING or LOCKSTEP_NO_HUGEPAGES is set, or when the exec fails.
void ensure_malloc_tuning(char** argv);

}  // namespace lockstep::util
