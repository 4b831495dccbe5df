// Writes the synthetic comparison's reports (report.html and the other file formats) into a
// folder, for the headless-browser check (tests/browser/check-html.sh).
//
//   report_fixture DIR
#include <exception>
#include <iostream>

#include "tests/fixtures/compare_fixture.h"
#include "reports/reporter.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: report_fixture DIR\n";
    return 2;
  }
  try {
    for (const auto& path :
         lockstep::reports::write_reports(lockstep::testing::make_compare_result(), argv[1]))
      std::cout << path.string() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "report_fixture: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
