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

// API 3.5: optional second base of an optimizer factory whose optimizer is
// elementwise: it updates each element of a parameter from that element's
// gradient and state alone (SGD, Adam, AdamW, RMSprop, Adagrad; not LAMB or
// LARS, whose steps take a norm of the whole tensor), so stepping a slice of
// a parameter as a parameter of its own does to it what stepping the whole
// would. The host finds it with dynamic_cast. Under a wrapper that shards
// the optimizer (skein::ShardedOptimizer) the host then steps a large
// parameter in flat pieces, each a view the optimizer holds as a parameter:
// the step's temporaries (Adam's square root and quotient) are a piece's, not
// the parameter's. Checkpoints still hold each parameter's whole state: the
// host joins the pieces' states and splits them again through state_tensors.
class SKEIN_EXPORT ElementwiseOptimizer {
 public:
  virtual ~ElementwiseOptimizer();
  // The tensors of `state` (a parameter's, made by this factory's optimizer)
  // that hold one value per element of the parameter (Adam: exp_avg,
  // exp_avg_sq, max_exp_avg_sq), as pointers to its members, which the host
  // reads and replaces; an undefined one (max_exp_avg_sq without amsgrad) is
  // left as it is. The state's other members (Adam's step) are the same for
  // every piece of a parameter.
  virtual std::vector<torch::Tensor*> state_tensors(torch::optim::OptimizerParamState& state) const = 0;
};

}  // namespace skein
