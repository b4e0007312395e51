// Model "mlp": flatten, then Linear + activation (+ dropout) per hidden layer.
#include <torch/nn/modules/linear.h>

#include "skein/kit/nn_helpers.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and MlpOptions.
#define MLP_OPTIONS(X)                                                             \
  X(hidden, int_list, "[256, 128]", "Hidden layer widths", SKEIN_RANGE("(0, )"))   \
  SKEIN_ACTIVATION_OPTION(X)                                                       \
  X(dropout, number, "0.0", "Dropout after each hidden layer", SKEIN_RANGE("[0, 1)"))

namespace {

SKEIN_OPTIONS_STRUCT(MlpOptions, MLP_OPTIONS)

class Mlp final : public skein::SequentialModel {
 public:
  explicit Mlp(const skein::PluginArgs& args) {
    const auto& opt = args.options;
    const MlpOptions o(opt);
    const auto& widths = o.hidden;
    std::int64_t in = skein::flat_size(args.data->input_shape);
    double parameters = 0;
    for (auto width : widths) {
      parameters += skein::linear_parameters(static_cast<double>(in), static_cast<double>(width));
      in = width;
    }
    parameters += skein::linear_parameters(static_cast<double>(in), static_cast<double>(args.data->num_classes));
    skein::check_parameters_fit(opt, MlpOptions::names::hidden, parameters);

    in = skein::flat_size(args.data->input_shape);
    net_->push_back(torch::nn::Flatten());
    for (auto width : widths) {
      net_->push_back(torch::nn::Linear(in, width));
      add_activation_and_dropout(o.activation, o.dropout, opt.owner());
      in = width;
    }
    net_->push_back(torch::nn::Linear(in, args.data->num_classes));
  }
};

}  // namespace

SKEIN_PLUGIN(Mlp, model, "mlp", "1.0.0", "Multi-layer perceptron on flattened inputs",
             SKEIN_OPTION_SPECS(MLP_OPTIONS))
