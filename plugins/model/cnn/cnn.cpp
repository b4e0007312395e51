// Model "cnn": conv blocks (3x3 conv, activation, 2x2 max-pool), then a
// hidden linear layer and the classifier. For image inputs [C, H, W].
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include "skein/kit/nn_helpers.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and CnnOptions.
#define CNN_OPTIONS(X)                                                                             \
  X(channels, int_list, "[32, 64]", "Output channels of each conv block", SKEIN_RANGE("(0, )"))    \
  X(hidden, integer, "128", "Width of the hidden linear layer", SKEIN_RANGE("(0, )"))              \
  SKEIN_ACTIVATION_OPTION(X)                                                                       \
  X(dropout, number, "0.25", "Dropout before the classifier", SKEIN_RANGE("[0, 1)"))

namespace {

SKEIN_OPTIONS_STRUCT(CnnOptions, CNN_OPTIONS)

class Cnn final : public skein::SequentialModel {
 public:
  explicit Cnn(const skein::PluginArgs& args) {
    const auto& opt = args.options;
    const auto& shape = args.data->input_shape;
    if (shape.size() != 3)
      opt.fail(CnnOptions::names::channels, "needs image inputs [C, H, W]; the dataset gives " +
                               std::to_string(shape.size()) + "-d samples");
    const CnnOptions o(opt);
    const std::string& act = o.activation;
    const auto& blocks = o.channels;
    const auto hidden = o.hidden;
    check_size(opt, shape, blocks, hidden, args.data->num_classes);
    std::int64_t channels = shape[0], h = shape[1], w = shape[2];
    for (auto c : blocks) {
      net_->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, c, 3).padding(1)));
      add_activation_and_dropout(act, 0.0, opt.owner());
      net_->push_back(torch::nn::MaxPool2d(2));
      channels = c;
      h /= 2;
      w /= 2;
    }
    net_->push_back(torch::nn::Flatten());
    net_->push_back(torch::nn::Linear(channels * h * w, hidden));
    add_activation_and_dropout(act, o.dropout, opt.owner());
    net_->push_back(torch::nn::Linear(hidden, args.data->num_classes));
  }

 private:
  // Checks the options before any layer is made (and allocated).
  static void check_size(const skein::Options& opt, const std::vector<std::int64_t>& shape,
                         const std::vector<std::int64_t>& blocks, std::int64_t hidden, std::int64_t classes) {
    double channels = static_cast<double>(shape[0]), parameters = 0;
    std::int64_t h = shape[1], w = shape[2];
    for (auto c : blocks) {
      if (h < 2 || w < 2) opt.fail(CnnOptions::names::channels, "has more pooling stages than the image allows");
      parameters += skein::conv2d_parameters(channels, static_cast<double>(c), 3);
      channels = static_cast<double>(c);
      h /= 2;
      w /= 2;
    }
    skein::check_parameters_fit(opt, CnnOptions::names::channels, parameters);
    parameters += skein::linear_parameters(channels * static_cast<double>(h * w), static_cast<double>(hidden)) +
                  skein::linear_parameters(static_cast<double>(hidden), static_cast<double>(classes));
    skein::check_parameters_fit(opt, CnnOptions::names::hidden, parameters);
  }
};

}  // namespace

SKEIN_PLUGIN(Cnn, model, "cnn", "1.0.0", "Small convolutional net for images such as 28x28 MNIST",
             SKEIN_OPTION_SPECS(CNN_OPTIONS))
