#include "harness/compare/swap_hint.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "harness/util/format.h"

namespace lockstep::compare {

namespace {
bool contains_baseline(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s.find("baseline") != std::string::npos;
}
}  // namespace

bool named_like_baseline(const ArmResult& arm) {
  return contains_baseline(std::filesystem::path(arm.config_path).filename().string()) ||
         contains_baseline(arm.name);
}

std::string swapped_arms_hint(const CompareResult& r) {
  const Delta& d = r.delta.tokens_per_sec_pct;
  if (r.mode != Mode::AB || !d.known || !d.significant || !(d.point <= -kSwapHintSlowdownPct))
    return "";
  if (!named_like_baseline(r.variant) || named_like_baseline(r.baseline)) return "";
  return "the VARIANT (" + r.variant.config_path + ") is the config named like a baseline and runs " +
         util::format_number("%.0f", -d.point) + "% slower than the BASELINE (" +
         r.baseline.config_path +
         "): did you swap them? `lockstep compare BASELINE VARIANT` takes the baseline first";
}

}  // namespace lockstep::compare
