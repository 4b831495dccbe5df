// The data layer and the rendezvous environment: torch-free, so they also run under ASan+UBSan.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "harness/dist/rendezvous.h"
#include "harness/util/process.h"
#include "workloads/data.h"

using namespace lockstep;
using namespace lockstep::workloads;
namespace fs = std::filesystem;

namespace {

DataConfig synthetic(int64_t fanout = 4) {
  DataConfig d;
  d.source = "synthetic";
  d.batch_size = 8;
  d.fanout = fanout;
  return d;
}

fs::path temp_file(const std::string& name, const std::string& bytes) {
  fs::path p = fs::temp_directory_path() /
               ("lockstep-data-" + std::to_string(std::random_device{}()) + "-" + name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

std::vector<int64_t> sample(const TokenSource& s, uint64_t index, int64_t len) {
  std::vector<int64_t> v(static_cast<size_t>(len));
  s.sample(index, v.data(), len);
  return v;
}

}  // namespace

TEST(SyntheticData, IsAPureFunctionOfSeedAndIndex) {
  auto a = make_source(synthetic(), 512, 65, 7), b = make_source(synthetic(), 512, 65, 7),
       c = make_source(synthetic(), 512, 65, 8);
  EXPECT_EQ(sample(*a, 3, 65), sample(*b, 3, 65));
  EXPECT_NE(sample(*a, 3, 65), sample(*a, 4, 65));
  EXPECT_NE(sample(*a, 3, 65), sample(*c, 3, 65));
  for (int64_t t : sample(*a, 11, 65)) {
    EXPECT_GE(t, 0);
    EXPECT_LT(t, 512);
  }
}

TEST(SyntheticData, LossFloorIsTheEntropyRateAndMatchesTheStream) {
  auto s = make_source(synthetic(4), 64, 2001, 1);
  // p ∝ (8, 4, 2, 1)/15: H = -Σ p ln p
  double h = 0;
  for (double w : {8.0, 4.0, 2.0, 1.0}) h -= w / 15 * std::log(w / 15);
  ASSERT_TRUE(s->loss_floor().has_value());
  EXPECT_NEAR(*s->loss_floor(), h, 1e-12);
  // Empirical conditional entropy of next token given current, over many transitions.
  std::map<int64_t, std::map<int64_t, double>> counts;
  for (uint64_t i = 0; i < 200; ++i) {
    auto v = sample(*s, i, 2001);
    for (size_t k = 0; k + 1 < v.size(); ++k) counts[v[k]][v[k + 1]] += 1;
  }
  double total = 0, hcond = 0;
  for (auto& [from, row] : counts) {
    double n = 0;
    for (auto& [to, c] : row) n += c;
    for (auto& [to, c] : row) hcond -= c * std::log(c / n);
    total += n;
  }
  EXPECT_NEAR(hcond / total, h, 0.02);
  EXPECT_LT(h, std::log(64.0) / 2);  // learnable: far below ln(V)
}

TEST(BatchPlan, RanksSplitTheSameGlobalBatch) {
  BatchPlan one{8, 1, 2}, two{8, 2, 2};
  std::vector<uint64_t> a, b;
  for (int64_t row = 0; row < 8; ++row) a.push_back(one.index(3, 1, 0, row));
  for (int64_t rank = 0; rank < 2; ++rank)
    for (int64_t row = 0; row < 4; ++row) b.push_back(two.index(3, 1, rank, row));
  EXPECT_EQ(a, b);
  EXPECT_EQ(one.index(1, 0, 0, 0), 0u);
  EXPECT_EQ(one.index(2, 0, 0, 0), 16u);  // step 1 used 2 micro-steps x 8
}

TEST(TextData, BytesOfAFileAsTokens) {
  auto p = temp_file("text.txt", "hello lockstep, hello determinism");
  DataConfig d = synthetic();
  d.source = "text";
  d.path = p.string();
  auto s = make_source(d, 256, 8, 1);
  auto v = sample(*s, 5, 8);
  std::string text = "hello lockstep, hello determinism";
  std::string got;
  for (int64_t t : v) got += static_cast<char>(t);
  EXPECT_NE(text.find(got), std::string::npos) << got;
  EXPECT_EQ(v, sample(*s, 5, 8));
  d.path = (p.string() + ".missing");
  EXPECT_THROW(make_source(d, 256, 8, 1), std::runtime_error);
  EXPECT_THROW(make_source(DataConfig{"text", p.string(), 8, 1, 4}, 256, 1000, 1),
               std::runtime_error);  // shorter than a sample
  fs::remove(p);
}

TEST(TokenData, Uint16FilesRawAndWithTheLlmcHeader) {
  std::string raw;
  for (uint16_t t : {1, 2, 3, 4, 5, 6, 7, 8}) raw.append(reinterpret_cast<const char*>(&t), 2);
  auto p = temp_file("raw.bin", raw);
  DataConfig d{"tokens", p.string(), 8, 1, 4};
  auto s = make_source(d, 16, 4, 1);
  auto v = sample(*s, 0, 4);
  EXPECT_EQ(v[1], v[0] + 1);
  EXPECT_GE(v[0], 1);
  std::string header(1024, '\0');
  int32_t magic = 20240520;
  std::memcpy(header.data(), &magic, 4);
  auto q = temp_file("llmc.bin", header + raw);
  d.path = q.string();
  auto s2 = make_source(d, 16, 8, 1);
  auto all = sample(*s2, 0, 8);
  EXPECT_EQ(all, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));  // the header is skipped
  try {
    make_source(d, 5, 4, 1);
    FAIL() << "token >= vocab accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("token 5 at position 4 >= vocab_size 5"),
              std::string::npos)
        << e.what();
  }
  auto odd = temp_file("odd.bin", raw + "x");
  d.path = odd.string();
  EXPECT_THROW(make_source(d, 16, 4, 1), std::runtime_error);
  for (const auto& f : {p, q, odd}) fs::remove(f);
}

TEST(BatchStats, EntropyRepeatsAndHash) {
  std::vector<int64_t> same(100, 7), mixed;
  for (int i = 0; i < 100; ++i) mixed.push_back(i % 4);
  auto a = batch_stats(same.data(), same.size()), b = batch_stats(mixed.data(), mixed.size());
  EXPECT_DOUBLE_EQ(a.token_entropy, 0.0);
  EXPECT_DOUBLE_EQ(a.repeat_share, 1.0);
  EXPECT_NEAR(b.token_entropy, std::log(4.0), 1e-12);
  EXPECT_DOUBLE_EQ(b.repeat_share, 0.0);
  EXPECT_NE(a.hash, b.hash);
  EXPECT_EQ(batch_stats(mixed.data(), mixed.size()).hash, b.hash);
  EXPECT_DOUBLE_EQ(batch_stats(nullptr, 0).token_entropy, 0.0);
}

// ---- rendezvous ---------------------------------------------------------------------------------

namespace {
dist::RankInfo info(std::map<std::string, std::string> env) {
  return dist::rank_info_from_env([env](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}
}  // namespace

TEST(Rendezvous, TorchrunSlurmOpenMpiAndDefaults) {
  auto d = info({});
  EXPECT_EQ(d.rank, 0);
  EXPECT_EQ(d.world_size, 1);
  EXPECT_EQ(d.source, "default");
  auto t = info({{"RANK", "1"},
                 {"WORLD_SIZE", "4"},
                 {"LOCAL_RANK", "1"},
                 {"MASTER_ADDR", "10.0.0.2"},
                 {"MASTER_PORT", "29600"},
                 {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.world_size, 4);
  EXPECT_EQ(t.master_addr, "10.0.0.2");
  EXPECT_EQ(t.master_port, 29600);
  EXPECT_TRUE(t.agent_store);
  EXPECT_EQ(t.source, "torchrun");
  auto s = info({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}});
  EXPECT_EQ(s.rank, 3);
  EXPECT_EQ(s.world_size, 8);
  EXPECT_EQ(s.local_rank, 1);
  EXPECT_EQ(s.source, "slurm");
  EXPECT_FALSE(s.agent_store);
  auto m = info({{"OMPI_COMM_WORLD_RANK", "2"},
                 {"OMPI_COMM_WORLD_SIZE", "3"},
                 {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}});
  EXPECT_EQ(m.rank, 2);
  EXPECT_EQ(m.source, "openmpi");
  // torchrun's variables win over a surrounding Slurm allocation.
  auto both =
      info({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "9"}});
  EXPECT_EQ(both.world_size, 2);
}

TEST(Rendezvous, InconsistentEnvironmentsAreErrorsNamingTheVariable) {
  auto msg = [](std::map<std::string, std::string> env) {
    try {
      info(env);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg({{"RANK", "0"}}).find("WORLD_SIZE is missing"), std::string::npos);
  EXPECT_NE(msg({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find("RANK=2 is not below WORLD_SIZE=2"),
            std::string::npos);
  EXPECT_NE(msg({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).find("RANK=\"x\""), std::string::npos);
  EXPECT_NE(msg({{"MASTER_PORT", "70000"}}).find("MASTER_PORT"), std::string::npos);
}

// ---- GPUs per rank (issue 17) -------------------------------------------------------------------

TEST(CudaDevice, EachLocalRankGetsAGpuOfItsOwnNeverAShare) {
  std::string why;
  EXPECT_EQ(dist::cuda_device_for(0, 2, &why), 0);
  EXPECT_EQ(dist::cuda_device_for(1, 2, &why), 1);
  // A third rank on a 2-GPU machine used to get GPU 2 % 2 = 0, silently shared with rank 0.
  EXPECT_FALSE(dist::cuda_device_for(2, 2, &why));
  EXPECT_NE(why.find("local rank 2 has no GPU of its own"), std::string::npos) << why;
  EXPECT_NE(why.find("2 CUDA device(s)"), std::string::npos) << why;
  EXPECT_FALSE(dist::cuda_device_for(0, 0, &why));
  EXPECT_NE(why.find("no CUDA device"), std::string::npos) << why;
}

TEST(CudaDevice, CompareGivesEachConcurrentRunGpusOfItsOwn) {
  const fs::path none = fs::temp_directory_path() / "lockstep-no-such-driver-dir";
  // CUDA_VISIBLE_DEVICES, as CUDA reads it (indices or UUIDs; empty = no GPU).
  EXPECT_EQ(util::visible_gpus("2, 3", none), (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(util::visible_gpus("GPU-0a1b,GPU-2c3d", none),
            (std::vector<std::string>{"GPU-0a1b", "GPU-2c3d"}));
  EXPECT_TRUE(util::visible_gpus("", none).empty());
  // Unset: one per device the driver lists.
  const fs::path dir = fs::temp_directory_path() / ("lockstep-gpus-" + std::to_string(::getpid()));
  fs::create_directories(dir / "0000:17:00.0");
  fs::create_directories(dir / "0000:65:00.0");
  fs::create_directories(dir / "0000:ca:00.0");
  EXPECT_EQ(util::visible_gpus(nullptr, dir), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_TRUE(util::visible_gpus(nullptr, none).empty());
  fs::remove_all(dir);

  const std::vector<std::string> four{"0", "1", "2", "3"};
  using Slots = std::vector<std::vector<std::string>>;
  EXPECT_EQ(util::gpu_slots(four, 1), (Slots{{"CUDA_VISIBLE_DEVICES=0"},
                                             {"CUDA_VISIBLE_DEVICES=1"},
                                             {"CUDA_VISIBLE_DEVICES=2"},
                                             {"CUDA_VISIBLE_DEVICES=3"}}));
  EXPECT_EQ(util::gpu_slots(four, 2),
            (Slots{{"CUDA_VISIBLE_DEVICES=0,1"}, {"CUDA_VISIBLE_DEVICES=2,3"}}));
  EXPECT_EQ(util::gpu_slots(four, 3), (Slots{{"CUDA_VISIBLE_DEVICES=0,1,2"}}));
  EXPECT_TRUE(util::gpu_slots({"0"}, 2).empty());  // a 2-rank run needs 2 GPUs
}
