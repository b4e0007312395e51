// The model type two plugins share: residual_mlp (the model plugin) makes it,
// record_block_norm (a callback) reaches it with ctx.model<ResidualMlp>().
// It lives in a library of its own, libresidual_mlp_net
// (skein_add_plugin_library), which both plugins link: SKEIN_EXPORT and the
// destructor defined there give the class one vtable and one type
// information, so the callback's dynamic_cast recognises the model the other
// plugin made. (Defined inside one plugin, each plugin would have its own.)
#pragma once
#include <cstdint>
#include <vector>

#include <torch/nn/modules/linear.h>

#include <skein/model.hpp>

class SKEIN_EXPORT ResidualMlp : public skein::Model {
 public:
  // An MLP whose `blocks` hidden layers of `width` add their input back (x + f(x)).
  ResidualMlp(std::int64_t inputs, std::int64_t width, std::int64_t blocks, std::int64_t classes);
  ~ResidualMlp() override;
  torch::Tensor forward(const torch::Tensor& inputs) override;

  // The model's own API, which the trainer never calls: the L2 norm of the
  // residual blocks' weights (how much the blocks add to their input).
  double block_weight_norm() const;

 private:
  torch::nn::Linear input_{nullptr}, output_{nullptr};
  std::vector<torch::nn::Linear> blocks_;
};
