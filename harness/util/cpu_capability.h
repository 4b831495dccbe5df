// Which vector instruction set LibTorch's own CPU kernels use (elementwise ops, softmax,
// LayerNorm, dtype casts, reductions: everything that is not a GEMM).
//
// LibTorch 1.13 runs them with AVX2 even on an AVX512 CPU unless ATEN_CPU_CAPABILITY=avx512 asks
// for AVX512 (PyTorch made it opt-in because the first AVX512 parts lowered their clock for it).
// On CPUs that have AVX512-BF16 (Cooper Lake, Sapphire Rapids and later, AMD Zen 4 and later)
// that concern does not apply, and on the CI machine (AMD EPYC, AVX512-BF16) AVX512 measured +1
// to +2 points of bf16 MFU at d_model 256 (interleaved pairs: 63.9% -> 64.9% median over 5,
// 63.2% -> 65.4% over 4, no pair slower; bf16 softmax 0.95 -> 0.72 ms, bf16 add 0.31 -> 0.16 ms
// per call), fp32 within noise. Lockstep therefore asks for it there, before LibTorch reads the
// variable; a value the user set is always kept (set ATEN_CPU_CAPABILITY=avx2 to opt out). The
// capability in use is in summary.json as environment.aten_cpu_capability.
#pragma once

#include <string>

namespace lockstep::util {

// The ATEN_CPU_CAPABILITY value to set, or "" to leave the environment alone: "avx512" when the
// user set none (`current` null or empty) and the CPU has AVX512 with BF16.
std::string aten_cpu_capability_to_set(const char* current, bool cpu_has_avx512_bf16);

// AVX512 F/BW/VL/DQ (what LibTorch's AVX512 kernels are compiled for), FMA and AVX512-BF16.
bool cpu_has_avx512_bf16();

// Sets ATEN_CPU_CAPABILITY as aten_cpu_capability_to_set says. Call before LibTorch runs its
// first operator (it reads the variable once) and before re-executing (the child inherits it).
void ensure_aten_cpu_capability();

}  // namespace lockstep::util
