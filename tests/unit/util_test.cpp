// Small utilities of the LibTorch-free library: malloc and CPU-capability start-up settings,
// threads.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <thread>

#include "harness/util/cpu_capability.h"
#include "harness/util/malloc_tuning.h"
#include "harness/util/process.h"

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

// Gloo's event loop is found as the thread its device started and set to SCHED_IDLE
// (harness/dist/comm.cpp): both halves on a real thread.
TEST(ThreadIds, ListsAThreadWhileItRunsAndRunOnlyWhenIdleSetsItsPolicy) {
  std::promise<int> tid_of;
  std::promise<void> done;
  std::thread t([&] {
    tid_of.set_value(static_cast<int>(::gettid()));
    done.get_future().wait();
  });
  const int tid = tid_of.get_future().get();
  const auto ids = lockstep::util::thread_ids();
  EXPECT_TRUE(std::binary_search(ids.begin(), ids.end(), tid)) << "thread " << tid;
  EXPECT_TRUE(std::binary_search(ids.begin(), ids.end(), static_cast<int>(::getpid())));
  EXPECT_EQ(::sched_getscheduler(tid), SCHED_OTHER);
  EXPECT_TRUE(lockstep::util::run_only_when_idle(tid));
  EXPECT_EQ(::sched_getscheduler(tid), SCHED_IDLE);
  EXPECT_EQ(::sched_getscheduler(0), SCHED_OTHER);  // the caller keeps its own
  done.set_value();
  t.join();
  const auto after = lockstep::util::thread_ids();
  EXPECT_FALSE(std::binary_search(after.begin(), after.end(), tid));
}
