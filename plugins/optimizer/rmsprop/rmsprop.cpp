// Optimizer "rmsprop": libtorch's RMSprop.
#include <torch/optim/rmsprop.h>

#include "skein/kit/optimizers.hpp"
#include "skein/optimizer.hpp"
#include "skein/plugin.hpp"

namespace {

torch::optim::RMSpropOptions read(const skein::Options& opt) {
  torch::optim::RMSpropOptions o(skein::read_positive(opt, "lr"));
  const double alpha = opt.get_number("alpha");
  if (!(alpha >= 0 && alpha <= 1)) opt.fail("alpha", "must be in [0, 1]");
  o.alpha(alpha)
      .eps(skein::read_nonnegative(opt, "eps"))
      .weight_decay(skein::read_nonnegative(opt, "weight_decay"))
      .momentum(skein::read_nonnegative(opt, "momentum"))
      .centered(opt.get_bool("centered"));
  return o;
}

class RmsProp final : public skein::LibtorchOptimizer<torch::optim::RMSprop, torch::optim::RMSpropOptions> {
 public:
  explicit RmsProp(const skein::PluginArgs& args) : LibtorchOptimizer(read(args.options)) {}
};

}  // namespace

SKEIN_PLUGIN(RmsProp, optimizer, "rmsprop", "1.0.0", "RMSprop (libtorch's)",
             SKEIN_OPTION("lr", number, "0.01", "Learning rate"),
             SKEIN_OPTION("alpha", number, "0.99", "Smoothing constant of the squared-gradient average"),
             SKEIN_OPTION("eps", number, "1e-8", "Term added to the denominator"),
             SKEIN_OPTION("weight_decay", number, "0", "L2 penalty"),
             SKEIN_OPTION("momentum", number, "0", "Momentum factor"),
             SKEIN_OPTION("centered", boolean, "false", "Normalize by the gradient's estimated variance"))
