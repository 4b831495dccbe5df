#include "harness/train/profile/op_table.h"

#include <algorithm>

namespace lockstep::train {

void OpTable::add(std::string_view name, double self_ns, double total_ns) {
  auto it = acc_.find(name);
  if (it == acc_.end()) {
    it = acc_.emplace(std::string(name), Acc{}).first;
    // An operator first seen at step k had no time in steps 0..k-1.
    auto& a = it->second;
    const size_t expected = std::max(window_, static_cast<size_t>(steps_) + 1);
    a.self_by_step.reserve(expected);
    a.total_by_step.reserve(expected);
    for (int64_t k = 0; k < steps_; ++k) a.self_by_step.add(0.0), a.total_by_step.add(0.0);
  }
  ++it->second.open_calls;
  it->second.self_ns += self_ns;
  it->second.total_ns += total_ns;
}

void OpTable::step_done() {
  for (auto& [name, a] : acc_) {
    a.self_by_step.add(a.self_ns);
    a.total_by_step.add(a.total_ns);
    a.calls += a.open_calls;
    a.open_calls = 0;
    a.self_ns = a.total_ns = 0;
  }
  ++steps_;
}

void OpTable::reset() {
  for (auto& [name, a] : acc_) {
    a.calls = a.open_calls = 0;
    a.self_ns = a.total_ns = 0;
    a.self_by_step.clear();
    a.total_by_step.clear();
  }
  steps_ = 0;
}

std::vector<OpStat> OpTable::top(size_t n) const {
  std::vector<OpStat> out;
  if (steps_ == 0) return out;
  for (const auto& [name, a] : acc_) {
    if (a.calls == 0) continue;  // a warm-up's operators that the window never ran
    out.push_back(OpStat{name, static_cast<double>(a.calls) / static_cast<double>(steps_),
                         a.self_by_step.median() / 1e6, a.total_by_step.median() / 1e6});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const OpStat& x, const OpStat& y) { return x.self_ms > y.self_ms; });
  std::vector<OpStat> kept;
  for (size_t i = 0; i < out.size(); ++i)
    if (i < n || out[i].name.rfind("lockstep::", 0) == 0) kept.push_back(out[i]);
  return kept;
}

}  // namespace lockstep::train
