// compare_refs.h fold_checkouts: the checkouts' folders out of a two-ref comparison's result.
#include <algorithm>

#include "harness/cli/compare_refs.h"

namespace lockstep::cli {

namespace {

void replace_every(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
    s.replace(at, from.size(), to);
}

}  // namespace

void fold_checkouts(compare::CompareResult& r, const std::string& base_root,
                    const std::string& head_root, const std::string& base_ref,
                    const std::string& head_ref) {
  // A value that names the base checkout where the head's names the head checkout.
  std::vector<std::string> dropped;
  r.changes.erase(std::remove_if(r.changes.begin(), r.changes.end(),
                                 [&](const config::Change& c) {
                                   std::string before = c.before;
                                   replace_every(before, base_root, head_root);
                                   const bool same = before == c.after;
                                   if (same) dropped.push_back(c.key);
                                   return same;
                                 }),
                  r.changes.end());
  r.changed_knobs.erase(std::remove_if(r.changed_knobs.begin(), r.changed_knobs.end(),
                                       [&](const std::string& k) {
                                         return std::find(dropped.begin(), dropped.end(), k) !=
                                                dropped.end();
                                       }),
                        r.changed_knobs.end());
  auto rewrite = [&](std::string& s) {
    replace_every(s, base_root + "/", base_ref + ":");
    replace_every(s, head_root + "/", head_ref + ":");
    replace_every(s, base_root, base_ref + ":");
    replace_every(s, head_root, head_ref + ":");
  };
  for (auto* arm : {&r.baseline, &r.variant}) {
    rewrite(arm->config_path);
    rewrite(arm->failure);
    for (auto& p : arm->plugins) rewrite(p.file);
  }
  for (auto& c : r.changes) {
    rewrite(c.before);
    rewrite(c.after);
  }
  for (auto& w : r.warnings) rewrite(w);
  for (auto& c : r.checks) rewrite(c.detail);
  rewrite(r.klass_source);
  rewrite(r.policy_source);
  rewrite(r.failure);
  rewrite(r.alignment.explanation);
}

}  // namespace lockstep::cli
