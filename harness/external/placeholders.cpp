#include "harness/external/placeholders.h"

#include <algorithm>

#include "harness/config/config.h"

namespace lockstep::external {
namespace {

// Walks `text`, calling literal(c) for each plain character and name(n) for each {n}. Returns an
// error for an unclosed "{" or an unmatched "}".
template <class Literal, class Name>
std::optional<std::string> walk(const std::string& text, Literal literal, Name name) {
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      literal(c);
      ++i;
    } else if (c == '{') {
      const size_t close = text.find('}', i + 1);
      if (close == std::string::npos)
        return "unclosed \"{\" in \"" + text + "\" (write {{ for a literal brace)";
      if (auto err = name(text.substr(i + 1, close - i - 1))) return err;
      i = close;
    } else if (c == '}') {
      return "unmatched \"}\" in \"" + text + "\" (write }} for a literal brace)";
    } else {
      literal(c);
    }
  }
  return std::nullopt;
}

}  // namespace

const std::vector<std::string>& placeholder_names() {
  static const std::vector<std::string> names{"seed", "steps", "metrics", "out"};
  return names;
}

std::optional<std::string> placeholder_error(const std::string& text) {
  return walk(
      text, [](char) {},
      [](const std::string& n) -> std::optional<std::string> {
        const auto& names = placeholder_names();
        if (std::find(names.begin(), names.end(), n) != names.end()) return std::nullopt;
        std::string known;
        for (const auto& k : names) known += (known.empty() ? "{" : " {") + k + "}";
        const std::string m = config::did_you_mean(n, names);
        return "unknown placeholder {" + n + "}" + (m.empty() ? "" : " (did you mean {" + m + "}?)") +
               "; known: " + known + " ({{ and }} for literal braces)";
      });
}

std::string expand(const std::string& text, const std::map<std::string, std::string>& values) {
  std::string out;
  walk(
      text, [&](char c) { out += c; },
      [&](const std::string& n) -> std::optional<std::string> {
        out += values.at(n);
        return std::nullopt;
      });
  return out;
}

}  // namespace lockstep::external
