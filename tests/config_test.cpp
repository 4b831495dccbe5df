#include <gtest/gtest.h>

#include "harness/config/config.h"

using lockstep::config::Config;

TEST(Config, DefaultsAndPreset) {
  auto c = Config::parse("[model]\npreset = \"small\"\n", "t.toml");
  EXPECT_EQ(c.integer("model.d_model"), 256);
  EXPECT_EQ(c.integer("run.steps"), 200);
}
