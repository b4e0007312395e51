// Loss "cross_entropy": softmax cross-entropy of class scores against class ids.
#include <torch/nn/functional/loss.h>

#include "skein/loss.hpp"
#include "skein/plugin.hpp"

namespace {

class CrossEntropy final : public skein::ClassificationLoss {
 public:
  explicit CrossEntropy(const skein::PluginArgs& args) : ClassificationLoss(args.options.owner()) {
    smoothing_ = args.options.get_number("label_smoothing");
    if (!(smoothing_ >= 0 && smoothing_ <= 1)) args.options.fail("label_smoothing", "must be in [0, 1]");
  }

 private:
  torch::Tensor apply(const torch::Tensor& outputs, const torch::Tensor& targets) override {
    namespace F = torch::nn::functional;
    return F::cross_entropy(outputs, targets, F::CrossEntropyFuncOptions().label_smoothing(smoothing_));
  }
  double smoothing_ = 0;
};

}  // namespace

SKEIN_PLUGIN(CrossEntropy, loss, "cross_entropy", "1.1.0",
             "Cross-entropy of class scores [N, C] against class ids [N] or class probabilities [N, C] "
             "(one-hot or soft labels; accuracy against the most likely class)",
             SKEIN_OPTION("label_smoothing", number, "0.0", "Label smoothing in [0, 1]"))
