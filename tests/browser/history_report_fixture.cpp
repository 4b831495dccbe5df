// Records the synthetic demo history (tests/fixtures/history_fixture.h) into DIR/history.sqlite
// and writes its regression report (report.html, report.md, report.json) into DIR, for the
// headless-browser check (tests/browser/check-html.sh).
//
//   history_report_fixture DIR
#include <exception>
#include <filesystem>
#include <iostream>

#include "tests/fixtures/history_fixture.h"
#include "harness/history/report.h"
#include "reports/history/reporters.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: history_report_fixture DIR\n";
    return 2;
  }
  try {
    namespace fs = std::filesystem;
    const fs::path dir = argv[1];
    fs::create_directories(dir);
    fs::remove(dir / "history.sqlite");
    fs::remove(dir / "history.sqlite-wal");
    fs::remove(dir / "history.sqlite-shm");
    auto store = lockstep::history::Store::open(dir / "history.sqlite", true);
    lockstep::testing::record_demo_history(store);
    const auto report =
        lockstep::history::build_report(store.series(), {}, (dir / "history.sqlite").string());
    for (const auto& path : lockstep::reports::write_history_reports(report, dir))
      std::cout << path.string() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "history_report_fixture: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
