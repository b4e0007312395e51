#pragma once
#include <torch/nn/module.h>
#include <torch/types.h>

#include "skein/detail/export.hpp"

namespace skein {

// Base of every model plugin. It is a plain torch::nn::Module: the trainer and
// parallel wrappers never wrap or replace it, so ctx.model<YourModel>() always
// reaches your own type. forward maps a batch of inputs to class logits.
class SKEIN_EXPORT Model : public torch::nn::Module {
 public:
  ~Model() override;
  virtual torch::Tensor forward(const torch::Tensor& inputs) = 0;
};

}  // namespace skein
