// report.md: a compact summary for a GitHub step summary or a pull-request comment (verdict
// heading, a short table per section, checks, warnings, the policy in a <details> block).
#pragma once

#include "reports/reporter.h"

namespace lockstep::reports {

class MarkdownReporter : public Reporter {
 public:
  std::string format() const override { return "markdown"; }
  std::string filename() const override { return "report.md"; }
  std::string render(const compare::CompareResult& r) const override;
};

// Text made safe for a Markdown table cell (pipes, emphasis, HTML and newlines neutralised).
std::string markdown_escape(const std::string& s);

}  // namespace lockstep::reports
