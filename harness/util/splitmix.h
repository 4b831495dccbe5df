// splitmix64 (Steele, Lea and Flood 2014; Vigna's reference): the finalizer of z + the golden
// gamma. A counter-based hash: unrelated 64-bit outputs for consecutive inputs, so a stream can be
// drawn in any order (in parallel, by element index) and be the same. The probe's signs and the
// CPU's weight noise use it; docs/method.md "The function probe" states it for other implementations.
#pragma once

#include <cstdint>

namespace lockstep::util {

inline uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace lockstep::util
