// A new autograd node, held the way this LibTorch's autograd holds nodes: std::shared_ptr up to
// the 2.1x series the wheel build uses (2.11), c10::intrusive_ptr in later ones (2.14 has Node
// derive from intrusive_ptr_target). Decided from torch::autograd::Edge's own member type.
#pragma once

#include <torch/csrc/autograd/edge.h>
#include <torch/csrc/autograd/function.h>

#include <memory>
#include <type_traits>
#include <utility>

namespace lockstep::compat {

template <typename T, typename... Args>
auto make_autograd_node(Args&&... args) {
  using Held = decltype(torch::autograd::Edge::function);
  if constexpr (std::is_same_v<Held, std::shared_ptr<torch::autograd::Node>>)
    return std::make_shared<T>(std::forward<Args>(args)...);
  else
    return c10::make_intrusive<T>(std::forward<Args>(args)...);
}

}  // namespace lockstep::compat
