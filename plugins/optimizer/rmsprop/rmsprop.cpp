// Optimizer "rmsprop": libtorch's RMSprop.
#include <torch/optim/rmsprop.h>

#include "skein/kit/optimizers.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and RmsPropValues.
#define RMSPROP_OPTIONS(X)                                                                                  \
  X(lr, number, "0.01", "Learning rate", SKEIN_RANGE("(0, )"))                                              \
  X(alpha, number, "0.99", "Smoothing constant of the squared-gradient average", SKEIN_RANGE("[0, 1]"))    \
  X(eps, number, "1e-8", "Term added to the denominator", SKEIN_RANGE("[0, )"))                             \
  X(weight_decay, number, "0", "L2 penalty", SKEIN_RANGE("[0, )"))                                          \
  X(momentum, number, "0", "Momentum factor", SKEIN_RANGE("[0, )"))                                         \
  X(centered, boolean, "false", "Normalize by the gradient's estimated variance")

namespace {

SKEIN_OPTIONS_STRUCT(RmsPropValues, RMSPROP_OPTIONS)

torch::optim::RMSpropOptions read(const skein::Options& opt) {
  const RmsPropValues v(opt);
  torch::optim::RMSpropOptions o(v.lr);
  o.alpha(v.alpha).eps(v.eps).weight_decay(v.weight_decay).momentum(v.momentum).centered(v.centered);
  return o;
}

using RmsProp = skein::LibtorchOptimizerOf<torch::optim::RMSprop, torch::optim::RMSpropOptions, read>;

}  // namespace

SKEIN_PLUGIN(RmsProp, optimizer, "rmsprop", "1.0.0", "RMSprop (libtorch's)", SKEIN_OPTION_SPECS(RMSPROP_OPTIONS))
