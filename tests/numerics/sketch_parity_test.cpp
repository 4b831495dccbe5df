// The Python helper's CountSketch (python/lockstep_trainer/sketch.py) equals Lockstep's own
// (harness/train/probe/probe.cpp) bit for bit on the same fp32 tensors (docs/protocol.md "The
// CountSketch"): a trainer that sketches with the helper is judged by the same numbers as
// Lockstep's own probe. Sizes below m, a multiple of m, and past one 2^18-element chunk; two
// probe batches adding into the same sketches.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "harness/train/probe/probe.h"
#include "harness/vocab/probe_file.h"

namespace fs = std::filesystem;

TEST(SketchParity, PythonHelperEqualsCppBitForBit) {
  const fs::path dir = fs::temp_directory_path() / ("sketch-parity-" + std::to_string(std::random_device{}()));
  const std::string src = LOCKSTEP_SOURCE_DIR;
  const std::string cmd = "PYTHONPATH='" + src + "/python' '" LOCKSTEP_TEST_PYTHON "' '" + src +
                          "/tests/numerics/sketch_parity.py' '" + dir.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const auto py = lockstep::train::read_probe(dir);
  ASSERT_EQ(py.buckets, lockstep::train::kProbeBuckets);
  ASSERT_EQ(py.steps.size(), 1u);

  std::vector<torch::Tensor> xs;
  for (size_t i = 0; i < py.tensors.size(); ++i) {
    std::ifstream in(dir / ("t" + std::to_string(i) + ".f32"), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_EQ(bytes.size() % 4, 0u);
    auto t = torch::empty({static_cast<int64_t>(bytes.size() / 4)}, torch::kFloat32);
    std::memcpy(t.data_ptr<float>(), bytes.data(), bytes.size());
    xs.push_back(t);
  }
  ASSERT_EQ(xs.size(), 4u);
  lockstep::train::ProbeRecorder rec;
  for (int64_t b = 0; b < 2; ++b) {
    rec.begin_forward(b);
    for (const auto& x : xs) rec.add("t", b == 0 ? x : x * 0.5);
    rec.end_forward();
  }
  std::vector<std::string> names;
  const auto cpp = rec.take(&names);
  ASSERT_EQ(cpp.size(), xs.size());
  for (size_t i = 0; i < cpp.size(); ++i) {
    ASSERT_EQ(cpp[i].size(), py.sketches[0][i].size());
    size_t differ = 0;
    double norm = 0;
    for (size_t c = 0; c < cpp[i].size(); ++c) {
      differ += cpp[i][c] != py.sketches[0][i][c];  // bitwise: == on doubles, no tolerance
      norm += cpp[i][c] * cpp[i][c];
    }
    EXPECT_EQ(differ, 0u) << "tensor " << i << " (" << xs[i].numel() << " elements)";
    EXPECT_GT(norm, 0.0) << "tensor " << i;  // a sketch of zeros would agree with anything
  }
  fs::remove_all(dir);
}
