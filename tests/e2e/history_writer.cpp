// A writer process for the concurrent-history test: waits for GO_FILE to appear (so that all
// writers start together), then records N runs named TAG into DB, each through its own
// connection, exactly as `lockstep run` does (history::try_record_run).
//
//   history_writer DB N TAG GO_FILE
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>

#include "tests/fixtures/history_fixture.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: history_writer DB N TAG GO_FILE\n";
    return 2;
  }
  const std::string db = argv[1], tag = argv[3];
  const int n = std::stoi(argv[2]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(argv[4])) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::cerr << "history_writer: " << argv[4] << " never appeared\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (int i = 0; i < n; ++i) {
    lockstep::testing::SyntheticRun r;
    r.name = tag;
    r.commit = lockstep::testing::commit_name(static_cast<size_t>(i));
    r.tokens_per_sec = 10000 + i;
    const std::string err = lockstep::history::try_record_run(
        db, lockstep::testing::synthetic_summary(r), "[run]\n", {2.0, 1.0}, "runs/" + tag);
    if (!err.empty()) {
      std::cerr << "history_writer " << tag << ": insert " << i << " failed: " << err << "\n";
      return 1;
    }
  }
  return 0;
}
