#include "variants/weight_copies.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include "harness/compat/autograd_node.h"

#include <cstdint>
#include <limits>
#include <string>

namespace lockstep::variants {
namespace {

// The gradient edge of a weight's low-precision copy: adds the copy's gradient into the fp32
// weight's gradient (grad += g; the fp32 gradient is a view into the flat buffer the step zeroes).
// A node of its own, with no inputs to release, kept across steps. Scheduled as AccumulateGrad is
// (the highest sequence number): it runs as soon as its gradient is ready.
class AddToGrad final : public torch::autograd::Node {
 public:
  explicit AddToGrad(torch::Tensor weight)
      : Node(std::numeric_limits<uint64_t>::max()), weight_(std::move(weight)) {}

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    const torch::Tensor& g = grads.at(0);
    if (!g.defined()) return {};
    at::NoGradGuard no_grad;
    torch::Tensor grad = weight_.grad();
    if (grad.defined())
      grad.add_(g);
    else
      weight_.mutable_grad() = g.to(weight_.scalar_type());
    return {};
  }

  std::string name() const override { return "lockstep::AddToGrad"; }

 private:
  torch::Tensor weight_;
};

}  // namespace

WeightCopies::WeightCopies(const Sharding& sharding, at::ScalarType dtype) : dtype_(dtype) {
  at::NoGradGuard no_grad;
  const auto layouts = sharding.unit_layouts();
  for (size_t u = 1; u < layouts.size(); ++u) {  // not unit 0 (the tied embedding)
    const auto& l = layouts[u];
    Unit unit;
    unit.full = l.full;
    unit.copy = torch::empty(l.full.sizes(), l.full.options().dtype(dtype));  // (padded)
    for (size_t k = 0; k < l.params.size(); ++k) {
      const torch::Tensor& p = l.params[k];
      // A slice that is not an autograd view of the buffer (detach): its gradient edge is ours,
      // and the buffer's in-place copy does not replace it.
      torch::Tensor copy = unit.copy.narrow(0, l.offsets[k], p.numel()).view(p.sizes()).detach();
      auto node = compat::make_autograd_node<AddToGrad>(p);
      node->add_input_metadata(copy);
      torch::autograd::impl::set_gradient_edge(copy, torch::autograd::Edge(std::move(node), 0));
      entries_.emplace(p.unsafeGetTensorImpl(), Entry{units_.size(), std::move(copy)});
    }
    units_.push_back(std::move(unit));
  }
}

WeightCopies::~WeightCopies() {
  if (compat::weight_source() == this) compat::weight_source() = nullptr;
}

const at::Tensor* WeightCopies::find(const at::Tensor& w, at::ScalarType dtype) {
  if (dtype != dtype_) return nullptr;
  const auto it = entries_.find(w.unsafeGetTensorImpl());
  if (it == entries_.end()) return nullptr;
  Unit& u = units_[it->second.unit];
  if (!u.fresh) {
    at::NoGradGuard no_grad;
    u.copy.copy_(u.full);  // (padded) the unit's one cast this step
    u.fresh = true;
  }
  return &it->second.copy;
}

WeightCopies::Window::Window(WeightCopies* copies) : copies_(copies) {
  if (copies_) compat::weight_source() = copies_;
}

WeightCopies::Window::~Window() {
  if (!copies_) return;
  compat::weight_source() = nullptr;
  for (auto& u : copies_->units_) u.fresh = false;
}

}  // namespace lockstep::variants
