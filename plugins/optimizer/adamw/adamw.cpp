// Optimizer "adamw": libtorch's AdamW.
#include <torch/optim/adamw.h>

#include "skein/kit/optimizers.hpp"
#include "skein/optimizer.hpp"
#include "skein/plugin.hpp"

namespace {

torch::optim::AdamWOptions read(const skein::Options& opt) {
  torch::optim::AdamWOptions o(skein::read_positive(opt, "lr"));
  skein::read_adam_options(opt, o);
  return o;
}

class AdamW final : public skein::LibtorchOptimizer<torch::optim::AdamW, torch::optim::AdamWOptions> {
 public:
  explicit AdamW(const skein::PluginArgs& args) : LibtorchOptimizer(read(args.options)) {}
};

}  // namespace

SKEIN_PLUGIN(AdamW, optimizer, "adamw", "1.0.0", "AdamW (libtorch's): Adam with decoupled weight decay",
             SKEIN_OPTION("lr", number, "0.001", "Learning rate"),
             SKEIN_OPTION("betas", number_list, "[0.9, 0.999]", "Coefficients of the running averages"),
             SKEIN_OPTION("eps", number, "1e-8", "Term added to the denominator"),
             SKEIN_OPTION("weight_decay", number, "0.01", "Decoupled weight decay"),
             SKEIN_OPTION("amsgrad", boolean, "false", "AMSGrad variant"))
