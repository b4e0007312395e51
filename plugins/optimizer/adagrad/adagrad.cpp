// Optimizer "adagrad": libtorch's Adagrad.
#include <torch/optim/adagrad.h>

#include "skein/optimizer.hpp"
#include "skein/plugin.hpp"

namespace {

class Adagrad final : public skein::OptimizerFactory {
 public:
  explicit Adagrad(const skein::PluginArgs& args) : options_(skein::read_positive(args.options, "lr")) {
    const auto& opt = args.options;
    options_.lr_decay(skein::read_nonnegative(opt, "lr_decay"))
        .weight_decay(skein::read_nonnegative(opt, "weight_decay"))
        .initial_accumulator_value(skein::read_nonnegative(opt, "initial_accumulator_value"))
        .eps(skein::read_nonnegative(opt, "eps"));
  }
  std::unique_ptr<torch::optim::Optimizer> create(std::vector<torch::Tensor> params) override {
    return std::make_unique<torch::optim::Adagrad>(std::move(params), options_);
  }

 private:
  torch::optim::AdagradOptions options_;
};

}  // namespace

SKEIN_PLUGIN(Adagrad, optimizer, "adagrad", "1.0.0", "Adagrad (libtorch's)",
             SKEIN_OPTION("lr", number, "0.01", "Learning rate"),
             SKEIN_OPTION("lr_decay", number, "0", "Learning-rate decay"),
             SKEIN_OPTION("weight_decay", number, "0", "L2 penalty"),
             SKEIN_OPTION("initial_accumulator_value", number, "0", "Initial value of the accumulators"),
             SKEIN_OPTION("eps", number, "1e-10", "Term added to the denominator"))
