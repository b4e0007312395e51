// Optimizer "adagrad": libtorch's Adagrad.
#include <torch/optim/adagrad.h>

#include "skein/kit/optimizers.hpp"
#include "skein/optimizer.hpp"
#include "skein/plugin.hpp"

namespace {

torch::optim::AdagradOptions read(const skein::Options& opt) {
  torch::optim::AdagradOptions o(skein::read_positive(opt, "lr"));
  o.lr_decay(skein::read_nonnegative(opt, "lr_decay"))
      .weight_decay(skein::read_nonnegative(opt, "weight_decay"))
      .initial_accumulator_value(skein::read_nonnegative(opt, "initial_accumulator_value"))
      .eps(skein::read_nonnegative(opt, "eps"));
  return o;
}

class Adagrad final : public skein::LibtorchOptimizer<torch::optim::Adagrad, torch::optim::AdagradOptions> {
 public:
  explicit Adagrad(const skein::PluginArgs& args) : LibtorchOptimizer(read(args.options)) {}
};

}  // namespace

SKEIN_PLUGIN(Adagrad, optimizer, "adagrad", "1.0.0", "Adagrad (libtorch's)",
             SKEIN_OPTION("lr", number, "0.01", "Learning rate"),
             SKEIN_OPTION("lr_decay", number, "0", "Learning-rate decay"),
             SKEIN_OPTION("weight_decay", number, "0", "L2 penalty"),
             SKEIN_OPTION("initial_accumulator_value", number, "0", "Initial value of the accumulators"),
             SKEIN_OPTION("eps", number, "1e-10", "Term added to the denominator"))
