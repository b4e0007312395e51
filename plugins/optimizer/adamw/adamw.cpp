// Optimizer "adamw": libtorch's AdamW (decoupled weight decay).
#include <torch/optim/adamw.h>

#include "skein/optimizer.hpp"
#include "skein/plugin.hpp"

namespace {

class AdamW final : public skein::OptimizerFactory {
 public:
  explicit AdamW(const skein::PluginArgs& args) : options_(skein::read_positive(args.options, "lr")) {
    skein::read_adam_options(args.options, options_);
  }
  std::unique_ptr<torch::optim::Optimizer> create(std::vector<torch::Tensor> params) override {
    return std::make_unique<torch::optim::AdamW>(std::move(params), options_);
  }

 private:
  torch::optim::AdamWOptions options_;
};

}  // namespace

SKEIN_PLUGIN(AdamW, optimizer, "adamw", "1.0.0", "AdamW (libtorch's): Adam with decoupled weight decay",
             SKEIN_OPTION("lr", number, "0.001", "Learning rate"),
             SKEIN_OPTION("betas", number_list, "[0.9, 0.999]", "Coefficients of the running averages"),
             SKEIN_OPTION("eps", number, "1e-8", "Term added to the denominator"),
             SKEIN_OPTION("weight_decay", number, "0.01", "Decoupled weight decay"),
             SKEIN_OPTION("amsgrad", boolean, "false", "AMSGrad variant"))
