// `lockstep calibrate`: the GEMM peak of this CPU per dtype and thread count, measured with the
// same LibTorch the runs use, for MFU on CPUs (GPUs use datasheet peaks).
#pragma once

#include <string>
#include <vector>

#include "variants/precision_traits.h"

namespace lockstep {

struct GemmPeak {
  variants::Compute dtype = variants::Compute::FP32;  // one of variants::calibrated_computes()
  int threads = 1;
  double flops = 0;  // best over the sizes tried
  int best_n = 0;    // square size that reached it
};

// Times square GEMMs (512..2048) for about `seconds` each and keeps the best rate.
GemmPeak measure_gemm_peak(variants::Compute dtype, int threads, double seconds);

// The LibTorch version the peaks are measured with (the calibration cache's key), e.g. "1.13.1":
// here, so that the command line needs no LibTorch header.
const char* libtorch_version();

}  // namespace lockstep
