// Loss "bce_with_logits": binary cross-entropy on logits, targets in [0, 1];
// `pos_weight` weighs the positive term (PyTorch's pos_weight: negatives /
// positives balances an imbalanced label), one value or one per output.
#include <torch/nn/functional/loss.h>

#include "skein/errors.hpp"
#include "skein/kit/losses.hpp"
#include "skein/loss.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and BceWithLogitsOptions.
#define BCE_WITH_LOGITS_OPTIONS(X) \
  X(pos_weight, number_list, "[]", "Weight of positives: one value, or one per output (empty: 1)", \
    SKEIN_RANGE("(0, )"))

namespace {

SKEIN_OPTIONS_STRUCT(BceWithLogitsOptions, BCE_WITH_LOGITS_OPTIONS)

class BceWithLogits final : public skein::ElementwiseLoss {
 public:
  explicit BceWithLogits(const skein::PluginArgs& args)
      : ElementwiseLoss(args.options.owner()), pos_weight_(BceWithLogitsOptions(args.options).pos_weight) {}

  // Share of outputs on the right side of 0 (targets above 0.5 count as 1).
  std::vector<skein::LossMetric> metrics(const torch::Tensor& outputs, const torch::Tensor& targets) const override {
    const torch::Tensor t = fit_targets(outputs, targets);
    const double acc = outputs.gt(0).eq(t.gt(0.5)).to(torch::kDouble).mean().item<double>();
    return {{"acc", acc}};
  }

 private:
  torch::Tensor apply(const torch::Tensor& outputs, const torch::Tensor& targets) override {
    namespace F = torch::nn::functional;
    auto options = F::BinaryCrossEntropyWithLogitsFuncOptions();
    if (!pos_weight_.empty()) {
      const std::int64_t outputs_per_sample = outputs.dim() > 1 ? outputs.size(-1) : 1;
      if (pos_weight_.size() != 1 && static_cast<std::int64_t>(pos_weight_.size()) != outputs_per_sample)
        throw skein::OptionError(kPosWeight, "loss (plugin 'bce_with_logits'): option '" + std::string(kPosWeight) + "' has " +
                                 std::to_string(pos_weight_.size()) + " entries, but the model outputs " +
                                 std::to_string(outputs_per_sample) + " values per sample: give 1 or " +
                                 std::to_string(outputs_per_sample));
      options.pos_weight(torch::tensor(pos_weight_, outputs.options()));
    }
    return F::binary_cross_entropy_with_logits(outputs, targets, options);
  }
  static constexpr const char* kPosWeight = BceWithLogitsOptions::names::pos_weight;
  std::vector<double> pos_weight_;
};

}  // namespace

SKEIN_PLUGIN(BceWithLogits, loss, "bce_with_logits", "1.1.0",
             "Binary cross-entropy on logits (multi-label too); targets in [0, 1] of the outputs' "
             "shape; records acc, the share of outputs on the targets' side of 0",
             SKEIN_OPTION_SPECS(BCE_WITH_LOGITS_OPTIONS))
