// Loss "cross_entropy": softmax cross-entropy of class scores against class
// ids, optionally weighted per class (imbalanced data; PyTorch's `weight`:
// the batch loss is the weighted mean, divided by the targets' weights).
#include <algorithm>

#include <torch/nn/functional/loss.h>

#include "skein/errors.hpp"
#include "skein/kit/losses.hpp"
#include "skein/loss.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and CrossEntropyOptions.
#define CROSS_ENTROPY_OPTIONS(X)                                                      \
  X(label_smoothing, number, "0.0", "Label smoothing", SKEIN_RANGE("[0, 1]"))         \
  X(weight, number_list, "[]", "Per-class weights, one per class, not all 0 (empty: all 1)",     \
    SKEIN_RANGE("[0, )"))

namespace {

SKEIN_OPTIONS_STRUCT(CrossEntropyOptions, CROSS_ENTROPY_OPTIONS)

class CrossEntropy final : public skein::ClassificationLoss {
 public:
  explicit CrossEntropy(const skein::PluginArgs& args) : ClassificationLoss(args.options.owner()) {
    const CrossEntropyOptions o(args.options);
    smoothing_ = o.label_smoothing;
    weight_ = o.weight;
    // Every sample would weigh 0: each batch's loss is 0 / 0, NaN, from the first step.
    if (!weight_.empty() && std::all_of(weight_.begin(), weight_.end(), [](double w) { return w == 0; }))
      args.options.fail(kWeight, "is all 0: no sample would count (every loss NaN); give some class a weight above 0");
  }

 private:
  torch::Tensor apply(const torch::Tensor& outputs, const torch::Tensor& targets) override {
    namespace F = torch::nn::functional;
    auto options = F::CrossEntropyFuncOptions().label_smoothing(smoothing_);
    if (!weight_.empty()) {
      if (static_cast<std::int64_t>(weight_.size()) != outputs.size(1))
        throw skein::OptionError(kWeight, "loss (plugin 'cross_entropy'): option '" + std::string(kWeight) + "' has " +
                                 std::to_string(weight_.size()) +
                                 " entries, but the model outputs " + std::to_string(outputs.size(1)) +
                                 " class scores: give one weight per class");
      options.weight(torch::tensor(weight_, outputs.options()));
    }
    return F::cross_entropy(outputs, targets, options);
  }
  static constexpr const char* kWeight = CrossEntropyOptions::names::weight;
  double smoothing_ = 0;
  std::vector<double> weight_;
};

}  // namespace

SKEIN_PLUGIN(CrossEntropy, loss, "cross_entropy", "1.2.1",
             "Cross-entropy of class scores [N, C] against class ids [N] or class probabilities [N, C] "
             "(one-hot or soft labels; accuracy against the most likely class)",
             SKEIN_OPTION_SPECS(CROSS_ENTROPY_OPTIONS))
