// Loss "mse": mean squared error.
#include <torch/nn/functional/loss.h>

#include "skein/kit/losses.hpp"
#include "skein/loss.hpp"
#include "skein/plugin.hpp"

namespace {

class Mse final : public skein::ElementwiseLoss {
 public:
  explicit Mse(const skein::PluginArgs& args) : ElementwiseLoss(args.options.owner()) {}

 private:
  torch::Tensor apply(const torch::Tensor& outputs, const torch::Tensor& targets) override {
    return torch::nn::functional::mse_loss(outputs, targets);
  }
};

}  // namespace

SKEIN_PLUGIN(Mse, loss, "mse", "1.0.0",
             "Mean squared error; targets [N] fit outputs [N, 1]")
