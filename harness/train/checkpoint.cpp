#include "harness/train/checkpoint.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "harness/util/files.h"

namespace lockstep::train {
namespace fs = std::filesystem;

namespace {
std::string step_dir_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return buf;
}
}  // namespace

void save_checkpoint(const fs::path& root, int64_t step, const CheckpointState& st,
                     variants::Sharding& sharding, dist::Comm& comm, int64_t keep) {
  const fs::path final_dir = root / step_dir_name(step);
  fs::path partial = final_dir;
  partial += ".partial";
  fs::create_directories(partial);
  comm.barrier("barrier(checkpoint start)");
  sharding.save(partial);
  if (comm.rank() == 0) {
    nlohmann::json j{{"step", st.step},
                     {"opt_steps", st.opt_steps},
                     {"loss_scale", st.loss_scale},
                     {"clean_steps", st.clean_steps},
                     {"world_size", comm.world()},
                     {"zero_stage", sharding.stage()},
                     // JSON doubles round-trip exactly (nlohmann writes max_digits10).
                     {"outlier_losses", st.outlier_losses},
                     {"outlier_norms", st.outlier_norms}};
    util::write_atomic(partial / "trainer.json", j.dump(2));
    torch::save(at::detail::getDefaultCPUGenerator().get_state(), (partial / "rng.pt").string());
  }
  comm.barrier("barrier(checkpoint written)");
  if (comm.rank() == 0) {
    fs::remove_all(final_dir);
    fs::rename(partial, final_dir);
    util::write_atomic(root / "latest", final_dir.filename().string() + "\n");
    std::vector<fs::path> done;
    for (const auto& e : fs::directory_iterator(root))
      if (e.is_directory() && e.path().filename().string().rfind("step-", 0) == 0 &&
          e.path().extension() != ".partial")
        done.push_back(e.path());
    std::sort(done.begin(), done.end());
    for (size_t i = 0; i + static_cast<size_t>(keep) < done.size(); ++i) fs::remove_all(done[i]);
  }
  comm.barrier("barrier(checkpoint published)");
}

fs::path latest_checkpoint(const fs::path& root) {
  std::error_code ec;
  if (!fs::exists(root / "latest", ec)) return {};
  std::string name = util::read_file(root / "latest");
  name.erase(name.find_last_not_of(" \n\r\t") + 1);
  return root / name;
}

CheckpointState load_checkpoint(const fs::path& dir_in, variants::Sharding& sharding,
                                int /*rank*/) {
  fs::path dir = dir_in;
  if (fs::exists(dir / "latest")) dir = latest_checkpoint(dir);
  if (!fs::exists(dir / "trainer.json"))
    throw std::runtime_error(dir.string() + ": not a checkpoint (no trainer.json)");
  auto j = nlohmann::json::parse(util::read_file(dir / "trainer.json"));
  CheckpointState st;
  st.step = j.at("step").get<int64_t>();
  st.opt_steps = j.at("opt_steps").get<int64_t>();
  st.loss_scale = j.at("loss_scale").get<double>();
  st.clean_steps = j.at("clean_steps").get<int64_t>();
  // Absent in checkpoints written before the window was saved: an empty window, as then.
  st.outlier_losses = j.value("outlier_losses", std::vector<double>{});
  st.outlier_norms = j.value("outlier_norms", std::vector<double>{});
  sharding.load(dir);
  torch::Tensor rng;
  torch::load(rng, (dir / "rng.pt").string());
  auto gen = at::detail::getDefaultCPUGenerator();
  gen.set_state(rng);
  return st;
}

}  // namespace lockstep::train
