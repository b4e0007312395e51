// Optimizer "sgd": libtorch's SGD with momentum, dampening, Nesterov and weight decay.
#include <torch/optim/sgd.h>

#include "skein/kit/optimizers.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and SgdValues.
#define SGD_OPTIONS(X)                                 \
  X(lr, number, "0.01", "Learning rate")               \
  X(momentum, number, "0", "Momentum factor")          \
  X(dampening, number, "0", "Dampening for momentum")  \
  X(nesterov, boolean, "false", "Nesterov momentum")   \
  X(weight_decay, number, "0", "L2 penalty")

namespace {

SKEIN_OPTIONS_STRUCT(SgdValues, SGD_OPTIONS)

torch::optim::SGDOptions read(const skein::Options& opt) {
  const SgdValues v(opt);
  torch::optim::SGDOptions o(skein::require_positive(opt, "lr", v.lr));
  o.momentum(skein::require_nonnegative(opt, "momentum", v.momentum))
      .dampening(skein::require_nonnegative(opt, "dampening", v.dampening))
      .nesterov(v.nesterov)
      .weight_decay(skein::require_nonnegative(opt, "weight_decay", v.weight_decay));
  if (o.nesterov() && (o.momentum() <= 0 || o.dampening() != 0))
    opt.fail("nesterov", "needs momentum > 0 and dampening 0");
  return o;
}

using Sgd = skein::LibtorchOptimizerOf<torch::optim::SGD, torch::optim::SGDOptions, read>;

}  // namespace

SKEIN_PLUGIN(Sgd, optimizer, "sgd", "1.0.0", "Stochastic gradient descent (libtorch's SGD)",
             SKEIN_OPTION_SPECS(SGD_OPTIONS))
