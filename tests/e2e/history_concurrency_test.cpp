// Several processes writing one history database at once (two ranks, parallel CI jobs on one
// box) lose no row: 4 real writer processes x 50 inserts into a fresh file -> 200 rows.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "harness/history/store.h"
#include "harness/util/process.h"

namespace fs = std::filesystem;
using namespace lockstep;

TEST(HistoryConcurrency, FourWritersTimesFiftyInsertsGiveTwoHundredRows) {
  const fs::path dir = fs::temp_directory_path() /
                       ("lockstep-history-conc-" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const fs::path db = dir / "history.sqlite", go = dir / "go";
  // The database does not exist yet: creation and migration race too.
  std::vector<util::Child> children;
  for (int w = 0; w < 4; ++w)
    children.push_back(util::spawn(
        {HISTORY_WRITER_BIN, db.string(), "50", "writer" + std::to_string(w), go.string()},
        dir / ("writer" + std::to_string(w) + ".log"), "writer" + std::to_string(w)));
  std::ofstream(go) << "go\n";  // all four start together
  for (const auto& c : children) {
    auto st = util::wait_for(c, 120);
    std::ifstream log(dir / (c.label + ".log"));
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_EQ(st.code, 0) << c.label << ": " << st.describe() << "\n" << text;
  }
  auto store = history::Store::open(db, false);
  EXPECT_EQ(store.count(), 200);
  std::map<std::string, int> per_writer;
  std::set<int64_t> ids;
  for (const auto& e : store.list()) {
    ++per_writer[e.config_name];
    ids.insert(e.id);
  }
  EXPECT_EQ(ids.size(), 200u);
  for (int w = 0; w < 4; ++w) EXPECT_EQ(per_writer["writer" + std::to_string(w)], 50) << w;
  EXPECT_EQ(store.series().size(), 200u) << "every run has its details row";
  fs::remove_all(dir);
}
