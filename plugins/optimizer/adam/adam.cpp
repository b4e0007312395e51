// Optimizer "adam": libtorch's Adam.
#include <torch/optim/adam.h>

#include "skein/kit/optimizers.hpp"
#include "skein/optimizer.hpp"
#include "skein/plugin.hpp"

namespace {

torch::optim::AdamOptions read(const skein::Options& opt) {
  torch::optim::AdamOptions o(skein::read_positive(opt, "lr"));
  skein::read_adam_options(opt, o);
  return o;
}

class Adam final : public skein::LibtorchOptimizer<torch::optim::Adam, torch::optim::AdamOptions> {
 public:
  explicit Adam(const skein::PluginArgs& args) : LibtorchOptimizer(read(args.options)) {}
};

}  // namespace

SKEIN_PLUGIN(Adam, optimizer, "adam", "1.0.0", "Adam (libtorch's); weight_decay is an L2 penalty",
             SKEIN_OPTION("lr", number, "0.001", "Learning rate"),
             SKEIN_OPTION("betas", number_list, "[0.9, 0.999]", "Coefficients of the running averages"),
             SKEIN_OPTION("eps", number, "1e-8", "Term added to the denominator"),
             SKEIN_OPTION("weight_decay", number, "0", "L2 penalty"),
             SKEIN_OPTION("amsgrad", boolean, "false", "AMSGrad variant"))
