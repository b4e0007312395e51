// Loss "l1": mean absolute error.
#include <torch/nn/functional/loss.h>

#include "skein/kit/losses.hpp"
#include "skein/loss.hpp"
#include "skein/plugin.hpp"

namespace {

class L1 final : public skein::ElementwiseLoss {
 public:
  explicit L1(const skein::PluginArgs& args) : ElementwiseLoss(args.options.owner()) {}

 private:
  torch::Tensor apply(const torch::Tensor& outputs, const torch::Tensor& targets) override {
    return torch::nn::functional::l1_loss(outputs, targets);
  }
};

}  // namespace

SKEIN_PLUGIN(L1, loss, "l1", "1.0.0", "Mean absolute error; targets [N] fit outputs [N, 1]")
