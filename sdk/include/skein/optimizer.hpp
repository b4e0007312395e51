#pragma once
// Optimizers: the optimizer plugin kind (config key `optimizer`).
#include <memory>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "skein/detail/export.hpp"

namespace skein {

// Base of every optimizer plugin: made once per run from its options, it
// creates the libtorch optimizer over the model's parameters. The trainer
// keeps this object alive as long as the optimizer (whose code lives in the
// plugin's library). Checkpoints save the optimizer with its own save().
class SKEIN_EXPORT OptimizerFactory {
 public:
  virtual ~OptimizerFactory();
  // `params`: the model's parameters, in named_parameters() order.
  virtual std::unique_ptr<torch::optim::Optimizer> create(std::vector<torch::Tensor> params) = 0;
};

}  // namespace skein
