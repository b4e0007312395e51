// Optimizer "sgd": libtorch's SGD with momentum, dampening, Nesterov and weight decay.
#include <torch/optim/sgd.h>

#include "skein/optimizer.hpp"
#include "skein/plugin.hpp"

namespace {

class Sgd final : public skein::OptimizerFactory {
 public:
  explicit Sgd(const skein::PluginArgs& args) : options_(skein::read_positive(args.options, "lr")) {
    const auto& opt = args.options;
    options_.momentum(skein::read_nonnegative(opt, "momentum"))
        .dampening(skein::read_nonnegative(opt, "dampening"))
        .nesterov(opt.get_bool("nesterov"))
        .weight_decay(skein::read_nonnegative(opt, "weight_decay"));
    if (options_.nesterov() && (options_.momentum() <= 0 || options_.dampening() != 0))
      opt.fail("nesterov", "needs momentum > 0 and dampening 0");
  }
  std::unique_ptr<torch::optim::Optimizer> create(std::vector<torch::Tensor> params) override {
    return std::make_unique<torch::optim::SGD>(std::move(params), options_);
  }

 private:
  torch::optim::SGDOptions options_;
};

}  // namespace

SKEIN_PLUGIN(Sgd, optimizer, "sgd", "1.0.0", "Stochastic gradient descent (libtorch's SGD)",
             SKEIN_OPTION("lr", number, "0.01", "Learning rate"),
             SKEIN_OPTION("momentum", number, "0", "Momentum factor"),
             SKEIN_OPTION("dampening", number, "0", "Dampening for momentum"),
             SKEIN_OPTION("nesterov", boolean, "false", "Nesterov momentum"),
             SKEIN_OPTION("weight_decay", number, "0", "L2 penalty"))
