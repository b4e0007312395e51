// Optimizer "sgd": libtorch's SGD with momentum, dampening, Nesterov and weight decay.
#include <torch/optim/sgd.h>

#include "skein/optimizer.hpp"
#include "skein/plugin.hpp"

namespace {

torch::optim::SGDOptions read(const skein::Options& opt) {
  torch::optim::SGDOptions o(skein::read_positive(opt, "lr"));
  o.momentum(skein::read_nonnegative(opt, "momentum"))
      .dampening(skein::read_nonnegative(opt, "dampening"))
      .nesterov(opt.get_bool("nesterov"))
      .weight_decay(skein::read_nonnegative(opt, "weight_decay"));
  if (o.nesterov() && (o.momentum() <= 0 || o.dampening() != 0))
    opt.fail("nesterov", "needs momentum > 0 and dampening 0");
  return o;
}

class Sgd final : public skein::LibtorchOptimizer<torch::optim::SGD, torch::optim::SGDOptions> {
 public:
  explicit Sgd(const skein::PluginArgs& args) : LibtorchOptimizer(read(args.options)) {}
};

}  // namespace

SKEIN_PLUGIN(Sgd, optimizer, "sgd", "1.0.0", "Stochastic gradient descent (libtorch's SGD)",
             SKEIN_OPTION("lr", number, "0.01", "Learning rate"),
             SKEIN_OPTION("momentum", number, "0", "Momentum factor"),
             SKEIN_OPTION("dampening", number, "0", "Dampening for momentum"),
             SKEIN_OPTION("nesterov", boolean, "false", "Nesterov momentum"),
             SKEIN_OPTION("weight_decay", number, "0", "L2 penalty"))
