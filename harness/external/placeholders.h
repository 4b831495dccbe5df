// The placeholders of an external trainer's command line and environment ([external] command and
// env): {seed}, {steps}, {metrics} (the JSONL file Lockstep reads), {out} (the arm's run folder).
// "{{" and "}}" stand for literal braces, as in Python's str.format.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::external {

// The names a command may use, in the order docs/extending.md lists them.
const std::vector<std::string>& placeholder_names();

// Why `text` cannot be expanded (an unknown placeholder with a did-you-mean, an unclosed or
// unmatched brace), or nullopt when every placeholder is known.
std::optional<std::string> placeholder_error(const std::string& text);

// `text` with every {name} replaced by values.at(name). Precondition: placeholder_error is empty.
std::string expand(const std::string& text, const std::map<std::string, std::string>& values);

}  // namespace lockstep::external
