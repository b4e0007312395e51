#pragma once
// A hook that runs after autograd has accumulated a parameter's gradient into
// its .grad (a post hook on the parameter's AccumulateGrad node, as PyTorch's
// DDP reducer does), under both libtorch APIs; the one place that knows them.
//   1.13: impl::grad_accumulator returns a std::shared_ptr<Node>;
//   2.x:  a c10::intrusive_ptr<Node>. Node::add_post_hook / del_post_hook and
//         utils::LambdaPostHook(fn) are alike in both.
// The node lives only while something holds it (the parameter's autograd
// metadata keeps a weak reference; a graph holds it during backward): keep
// the returned handle, or the next forward makes a new node without the hook.
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <utility>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/types.h>

namespace skein::torch_compat {

class AccumulatedGradHook {
 public:
  // Calls `fn` each time backward has accumulated a gradient into
  // param.grad(); `param` is a leaf that requires grad.
  AccumulatedGradHook(const torch::Tensor& param, std::function<void()> fn)
      : node_(torch::autograd::impl::grad_accumulator(param)) {
    if (!node_) throw std::logic_error("AccumulatedGradHook: not a leaf that requires grad");
    key_ = node_->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [fn = std::move(fn)](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          fn();
          return outputs;
        }));
  }
  ~AccumulatedGradHook() { node_->del_post_hook(key_); }
  AccumulatedGradHook(const AccumulatedGradHook&) = delete;
  AccumulatedGradHook& operator=(const AccumulatedGradHook&) = delete;

 private:
  decltype(torch::autograd::impl::grad_accumulator(std::declval<const torch::Tensor&>())) node_;
  std::uintptr_t key_ = 0;
};

}  // namespace skein::torch_compat
