// The GPU peak table (issue 17): found by the rank's own device properties, never by a substring of
// whatever GPU 0 is called. An unknown or ambiguous device gives no number (MFU "unknown").
#include <gtest/gtest.h>

#include "harness/train/profile/peak.h"

using lockstep::gpu_table_peak;
using lockstep::gpu_table_row;
using lockstep::GpuInfo;
using lockstep::resolve_peak;

namespace {
GpuInfo gpu(const std::string& name, int sms, int clock_mhz = 1980) {
  GpuInfo g;
  g.name = name;
  g.sm_count = sms;
  g.max_sm_clock_mhz = clock_mhz;
  return g;
}
}  // namespace

TEST(GpuPeakTable, H100PcieGetsItsOwnFiguresNotTheSxmOnes) {
  const auto pcie = gpu("NVIDIA H100 PCIe", 114, 1755);
  EXPECT_EQ(gpu_table_row(pcie), "H100 PCIe");
  EXPECT_DOUBLE_EQ(*gpu_table_peak(pcie, "bf16"), 756e12);
  EXPECT_DOUBLE_EQ(*gpu_table_peak(pcie, "tf32"), 378e12);
  EXPECT_DOUBLE_EQ(*gpu_table_peak(pcie, "fp32"), 51e12);
  const auto sxm = gpu("NVIDIA H100 80GB HBM3", 132);
  EXPECT_EQ(gpu_table_row(sxm), "H100 SXM");
  EXPECT_DOUBLE_EQ(*gpu_table_peak(sxm, "bf16"), 989e12);
  EXPECT_DOUBLE_EQ(*gpu_table_peak(sxm, "fp16"), 989e12);
}

TEST(GpuPeakTable, EveryListedGpuPerDtype) {
  struct Case {
    const char* name;
    int sms;
    const char* row;
    double bf16, tf32, fp32;
  };
  for (const Case& c : {
           Case{"NVIDIA A100-SXM4-80GB", 108, "A100", 312, 156, 19.5},
           Case{"NVIDIA A100 80GB PCIe", 108, "A100", 312, 156, 19.5},
           Case{"NVIDIA H200", 132, "H200", 989, 495, 67},
           Case{"NVIDIA B200", 148, "B200", 2250, 1100, 75},
       }) {
    SCOPED_TRACE(c.name);
    const auto g = gpu(c.name, c.sms);
    EXPECT_EQ(gpu_table_row(g), c.row);
    EXPECT_DOUBLE_EQ(*gpu_table_peak(g, "bf16"), c.bf16 * 1e12);
    EXPECT_DOUBLE_EQ(*gpu_table_peak(g, "fp16"), c.bf16 * 1e12);
    EXPECT_DOUBLE_EQ(*gpu_table_peak(g, "tf32"), c.tf32 * 1e12);
    EXPECT_DOUBLE_EQ(*gpu_table_peak(g, "fp32"), c.fp32 * 1e12);
  }
}

TEST(GpuPeakTable, OtherSkusAndSlicesAreUnknownNotTheNearestRow) {
  // The NVL boards share the SXM's SM count but not its clocks and power: no row.
  EXPECT_FALSE(gpu_table_row(gpu("NVIDIA H100 NVL", 132)));
  EXPECT_FALSE(gpu_table_row(gpu("NVIDIA H200 NVL", 132)));
  // GB200's name holds "B200" only inside a word.
  EXPECT_FALSE(gpu_table_row(gpu("NVIDIA GB200", 148)));
  EXPECT_FALSE(gpu_table_row(gpu("NVIDIA H800", 132)));
  EXPECT_FALSE(gpu_table_row(gpu("Tesla V100-SXM2-16GB", 80)));
  // A MIG slice reports the family's name with a fraction of the SMs.
  std::string why;
  EXPECT_FALSE(gpu_table_row(gpu("NVIDIA H100 80GB HBM3 MIG 1g.10gb", 16), &why));
  EXPECT_NE(why.find("reports 16 SMs"), std::string::npos) << why;
  EXPECT_FALSE(gpu_table_peak(gpu("NVIDIA H100 80GB HBM3 MIG 1g.10gb", 16), "bf16"));
}

TEST(ResolvePeak, CudaUsesTheRanksDevicePropertiesAndSaysWhichRow) {
  const auto pcie = gpu("NVIDIA H100 PCIe", 114, 1755);
  auto p = resolve_peak("cuda", lockstep::variants::Compute::BF16, 1, "2.11", &pcie);
  ASSERT_TRUE(p.flops);
  EXPECT_DOUBLE_EQ(*p.flops, 756e12);
  EXPECT_NE(p.source.find("H100 PCIe"), std::string::npos) << p.source;
  EXPECT_NE(p.source.find("114 SMs"), std::string::npos) << p.source;
  EXPECT_NE(p.source.find("1755 MHz"), std::string::npos) << p.source;

  const auto unknown = gpu("NVIDIA RTX 6000 Ada Generation", 142);
  p = resolve_peak("cuda", lockstep::variants::Compute::BF16, 1, "2.11", &unknown);
  EXPECT_FALSE(p.flops);
  EXPECT_EQ(p.source.rfind("unknown: ", 0), 0u) << p.source;

  p = resolve_peak("cuda", lockstep::variants::Compute::BF16, 1, "2.11", nullptr);  // never a guess
  EXPECT_FALSE(p.flops);
  EXPECT_EQ(p.source.rfind("unknown", 0), 0u) << p.source;

  // fp16 reads the bf16 column (variants/precision_traits.h: tensor cores run both at one rate).
  p = resolve_peak("cuda", lockstep::variants::Compute::FP16, 1, "2.11", &pcie);
  ASSERT_TRUE(p.flops);
  EXPECT_DOUBLE_EQ(*p.flops, 756e12);
  EXPECT_NE(p.source.find("dense bf16 peak"), std::string::npos) << p.source;
}
