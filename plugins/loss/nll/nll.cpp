// Loss "nll": negative log-likelihood of log-probabilities against class ids.
#include <torch/nn/functional/loss.h>

#include "skein/loss.hpp"
#include "skein/plugin.hpp"

namespace {

class Nll final : public skein::ClassificationLoss {
 public:
  explicit Nll(const skein::PluginArgs& args) : ClassificationLoss(args.options.owner()) {}

 private:
  torch::Tensor apply(const torch::Tensor& outputs, const torch::Tensor& targets) override {
    return torch::nn::functional::nll_loss(outputs, targets);
  }
};

}  // namespace

SKEIN_PLUGIN(Nll, loss, "nll", "1.0.0",
             "Negative log-likelihood of log-probabilities [N, C] (e.g. a log_softmax output) against "
             "class ids [N] (records accuracy)")
