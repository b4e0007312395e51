// Optimizer "sgd": libtorch's SGD with momentum, dampening, Nesterov and weight decay.
#include <torch/optim/sgd.h>

#include "skein/kit/optimizers.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and SgdValues.
#define SGD_OPTIONS(X)                                                        \
  X(lr, number, "0.01", "Learning rate", SKEIN_RANGE("(0, )"))                \
  X(momentum, number, "0", "Momentum factor", SKEIN_RANGE("[0, )"))           \
  X(dampening, number, "0", "Dampening for momentum", SKEIN_RANGE("[0, )"))   \
  X(nesterov, boolean, "false", "Nesterov momentum")                          \
  X(weight_decay, number, "0", "L2 penalty", SKEIN_RANGE("[0, )"))

namespace {

SKEIN_OPTIONS_STRUCT(SgdValues, SGD_OPTIONS)

torch::optim::SGDOptions read(const skein::Options& opt) {
  const SgdValues v(opt);
  torch::optim::SGDOptions o(v.lr);
  o.momentum(v.momentum).dampening(v.dampening).nesterov(v.nesterov).weight_decay(v.weight_decay);
  if (o.nesterov() && (o.momentum() <= 0 || o.dampening() != 0))
    opt.fail(SgdValues::names::nesterov, "needs momentum > 0 and dampening 0");
  return o;
}

using Sgd = skein::LibtorchOptimizerOf<torch::optim::SGD, torch::optim::SGDOptions, read>;

}  // namespace

SKEIN_PLUGIN(Sgd, optimizer, "sgd", "1.0.0", "Stochastic gradient descent (libtorch's SGD)",
             SKEIN_OPTION_SPECS(SGD_OPTIONS))
