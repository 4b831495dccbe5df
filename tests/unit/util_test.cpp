// Small utilities of the LibTorch-free library: malloc and CPU-capability start-up settings.
#include <gtest/gtest.h>

#include "harness/util/cpu_capability.h"
#include "harness/util/malloc_tuning.h"

using lockstep::util::with_malloc_tunables;

TEST(MallocTunables, AddsAllThreeToAnEmptyEnvironment) {
  EXPECT_EQ(with_malloc_tunables(""),
            "glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:"
            "glibc.malloc.trim_threshold=1099511627776");
}

TEST(MallocTunables, KeepsTheUsersSettingsAndNeverOverridesThem) {
  EXPECT_EQ(with_malloc_tunables("glibc.malloc.mmap_threshold=4096:glibc.rtld.x=1"),
            "glibc.malloc.mmap_threshold=4096:glibc.rtld.x=1:glibc.malloc.hugetlb=1:"
            "glibc.malloc.trim_threshold=1099511627776");
  EXPECT_EQ(with_malloc_tunables("glibc.malloc.hugetlb=0"),
            "glibc.malloc.hugetlb=0:glibc.malloc.mmap_threshold=33554432:"
            "glibc.malloc.trim_threshold=1099511627776");
}

TEST(MallocTunables, CompleteSettingsAreLeftAloneSoTheReExecHappensOnce) {
  const std::string once = with_malloc_tunables("");
  EXPECT_EQ(with_malloc_tunables(once), once);
}

TEST(MallocTunables, ANameThatOnlyEndsLikeOursDoesNotCount) {
  // "x.glibc.malloc.hugetlb=0" is another tunable; ours is still added.
  EXPECT_NE(with_malloc_tunables("x.glibc.malloc.hugetlb=0").find(":glibc.malloc.hugetlb=1"),
            std::string::npos);
}

using lockstep::util::aten_cpu_capability_to_set;

TEST(AtenCpuCapability, AsksForAvx512OnlyOnCpusWithAvx512Bf16) {
  EXPECT_EQ(aten_cpu_capability_to_set(nullptr, true), "avx512");
  EXPECT_EQ(aten_cpu_capability_to_set("", true), "avx512");
  EXPECT_EQ(aten_cpu_capability_to_set(nullptr, false), "");  // LibTorch's default stays
}

TEST(AtenCpuCapability, NeverOverridesTheUsersChoice) {
  EXPECT_EQ(aten_cpu_capability_to_set("avx2", true), "");
  EXPECT_EQ(aten_cpu_capability_to_set("default", false), "");
}
