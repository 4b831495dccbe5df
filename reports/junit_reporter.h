// junit.xml: one <testcase> per gate check (classname "lockstep.gate"), for CI systems that show
// test results (GitLab, Jenkins, GitHub test-report actions).
#pragma once

#include "reports/reporter.h"

namespace lockstep::reports {

class JunitReporter : public Reporter {
 public:
  std::string format() const override { return "junit"; }
  std::string filename() const override { return "junit.xml"; }
  std::string render(const compare::CompareResult& r) const override;
};

// Text made safe for XML 1.0 content and attribute values: the five entities, newlines and tabs
// as character references (so attributes keep them), other control characters dropped.
std::string xml_escape(const std::string& s);

}  // namespace lockstep::reports
