// The Chrome trace log: events kept compact with interned names, and a profiler warm-up's
// operator events dropped without touching the step and phase events around them.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/train/profile/trace.h"
#include "harness/util/files.h"

using lockstep::train::TraceEvent;
using lockstep::train::TraceLog;

namespace {

nlohmann::json written(const TraceLog& log) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("lockstep-trace-test-" + std::to_string(::getpid()) + ".json");
  log.write(path);
  std::ifstream in(path);
  auto doc = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  return doc["traceEvents"];
}

}  // namespace

TEST(TraceLog, WritesEveryEventWithItsNameCategoryAndTimes) {
  TraceLog log(/*rank=*/3);
  log.add(TraceEvent{"aten::native_layer_norm_backward", "op", 'X', 10.0, 2.5, 0});
  log.add(TraceEvent{"aten::mm", "op", 'X', 13.0, 4.0, 0});
  log.add(TraceEvent{"aten::native_layer_norm_backward", "op", 'X', 20.0, 1.5, 0});
  log.add(TraceEvent{"step 1", "step", 'X', 9.0, 30.0, 0});
  EXPECT_EQ(log.size(), 4u);
  auto ev = written(log);
  ASSERT_EQ(ev.size(), 6u);  // two metadata events, then the four in order
  EXPECT_EQ(ev[0]["ph"], "M");
  EXPECT_EQ(ev[2]["name"], "aten::native_layer_norm_backward");
  EXPECT_EQ(ev[3]["name"], "aten::mm");
  EXPECT_EQ(ev[4]["name"], "aten::native_layer_norm_backward");
  EXPECT_EQ(ev[4]["ts"], 20.0);
  EXPECT_EQ(ev[4]["dur"], 1.5);
  EXPECT_EQ(ev[5]["cat"], "step");
  EXPECT_EQ(ev[5]["pid"], 3);
}

TEST(TraceLog, DropSinceRemovesOnlyThatCategoryAfterTheMark) {
  TraceLog log(0);
  log.add(TraceEvent{"step 4", "step", 'X', 0.0, 10.0, 0});
  const size_t mark = log.size();
  log.add(TraceEvent{"aten::gelu", "op", 'X', 11.0, 1.0, 0});  // warm-up step's operators
  log.add(TraceEvent{"forward", "phase", 'X', 11.0, 3.0, 0});
  log.add(TraceEvent{"aten::mm", "op", 'X', 12.0, 1.0, 0});
  log.add(TraceEvent{"step 5", "step", 'X', 11.0, 10.0, 0});
  log.drop_since(mark, "op");
  auto ev = written(log);
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[2]["name"], "step 4");
  EXPECT_EQ(ev[3]["name"], "forward");
  EXPECT_EQ(ev[4]["name"], "step 5");
  log.drop_since(0, "no such category");  // nothing to drop: a no-op
  EXPECT_EQ(log.size(), 3u);
}

TEST(TraceLog, StopsAtItsCapacityInsteadOfGrowing) {
  TraceLog log(0, /*max_events=*/2);
  for (int i = 0; i < 5; ++i) log.add(TraceEvent{"aten::mm", "op", 'X', 1.0 * i, 1.0, 0});
  EXPECT_EQ(log.size(), 2u);
}
