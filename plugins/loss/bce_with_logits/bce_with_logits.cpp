// Loss "bce_with_logits": binary cross-entropy on logits, targets in [0, 1].
#include <torch/nn/functional/loss.h>

#include "skein/loss.hpp"
#include "skein/plugin.hpp"

namespace {

class BceWithLogits final : public skein::ElementwiseLoss {
 public:
  explicit BceWithLogits(const skein::PluginArgs& args) : ElementwiseLoss(args.options.owner()) {}

  // Share of outputs on the right side of 0 (targets above 0.5 count as 1).
  std::vector<skein::LossMetric> metrics(const torch::Tensor& outputs, const torch::Tensor& targets) const override {
    const torch::Tensor t = fit_targets(outputs, targets);
    const double acc = outputs.gt(0).eq(t.gt(0.5)).to(torch::kDouble).mean().item<double>();
    return {{"acc", acc}};
  }

 private:
  torch::Tensor apply(const torch::Tensor& outputs, const torch::Tensor& targets) override {
    return torch::nn::functional::binary_cross_entropy_with_logits(outputs, targets);
  }
};

}  // namespace

SKEIN_PLUGIN(BceWithLogits, loss, "bce_with_logits", "1.0.0",
             "Binary cross-entropy on logits (multi-label too); targets in [0, 1] of the outputs' "
             "shape; records acc, the share of outputs on the targets' side of 0")
