// report.md: a compact summary for a GitHub step summary or a pull-request comment (verdict
// heading, a short table per section, checks, warnings, the policy in a <details> block).
#pragma once

#include <string>
#include <vector>

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

// A code span for a table cell: its text is literal, except that pipes are escaped (they would
// split the cell) and newlines become spaces.
std::string markdown_code(const std::string& s);

// One table row: "| a | b |\n".
std::string markdown_row(const std::vector<std::string>& cells);

}  // namespace lockstep::reports
