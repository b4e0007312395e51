// Optimizer "rmsprop": libtorch's RMSprop.
#include <torch/optim/rmsprop.h>

#include "skein/kit/optimizers.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and RmsPropValues.
#define RMSPROP_OPTIONS(X)                                                               \
  X(lr, number, "0.01", "Learning rate")                                                 \
  X(alpha, number, "0.99", "Smoothing constant of the squared-gradient average")         \
  X(eps, number, "1e-8", "Term added to the denominator")                                \
  X(weight_decay, number, "0", "L2 penalty")                                             \
  X(momentum, number, "0", "Momentum factor")                                            \
  X(centered, boolean, "false", "Normalize by the gradient's estimated variance")

namespace {

SKEIN_OPTIONS_STRUCT(RmsPropValues, RMSPROP_OPTIONS)

torch::optim::RMSpropOptions read(const skein::Options& opt) {
  const RmsPropValues v(opt);
  if (!(v.alpha >= 0 && v.alpha <= 1)) opt.fail("alpha", "must be in [0, 1]");
  torch::optim::RMSpropOptions o(skein::require_positive(opt, "lr", v.lr));
  o.alpha(v.alpha)
      .eps(skein::require_nonnegative(opt, "eps", v.eps))
      .weight_decay(skein::require_nonnegative(opt, "weight_decay", v.weight_decay))
      .momentum(skein::require_nonnegative(opt, "momentum", v.momentum))
      .centered(v.centered);
  return o;
}

using RmsProp = skein::LibtorchOptimizerOf<torch::optim::RMSprop, torch::optim::RMSpropOptions, read>;

}  // namespace

SKEIN_PLUGIN(RmsProp, optimizer, "rmsprop", "1.0.0", "RMSprop (libtorch's)", SKEIN_OPTION_SPECS(RMSPROP_OPTIONS))
