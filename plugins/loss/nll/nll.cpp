// Loss "nll": negative log-likelihood of log-probabilities against class ids.
#include <torch/nn/functional/loss.h>

#include "skein/errors.hpp"
#include "skein/kit/losses.hpp"
#include "skein/loss.hpp"
#include "skein/plugin.hpp"

namespace {

class Nll final : public skein::ClassificationLoss {
 public:
  explicit Nll(const skein::PluginArgs& args) : ClassificationLoss(args.options.owner()) {}

  // libtorch's nll_loss takes class ids only.
  void check_targets(const torch::Tensor& targets, const skein::DataInfo& info, const std::string& split) const override {
    if (targets.dim() == 2 && targets.is_floating_point())
      throw skein::ConfigError(owner_ + ": the " + split + " targets are class probabilities; nll takes class ids [N] "
                               "(use the loss cross_entropy for one-hot or soft labels)");
    ClassificationLoss::check_targets(targets, info, split);
  }

 private:
  torch::Tensor apply(const torch::Tensor& outputs, const torch::Tensor& targets) override {
    return torch::nn::functional::nll_loss(outputs, targets);
  }
};

}  // namespace

SKEIN_PLUGIN(Nll, loss, "nll", "1.1.0",
             "Negative log-likelihood of log-probabilities [N, C] (e.g. a log_softmax output) against "
             "class ids [N] (records accuracy)")
