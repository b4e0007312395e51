// Model "mlp": flatten, then Linear + activation (+ dropout) per hidden layer.
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include "skein/model.hpp"
#include "skein/nn_helpers.hpp"
#include "skein/plugin.hpp"

namespace {

class Mlp final : public skein::Model {
 public:
  explicit Mlp(const skein::PluginArgs& args) {
    const auto& opt = args.options;
    const double dropout = opt.get_number("dropout");
    if (dropout < 0 || dropout >= 1) opt.fail("dropout", "must be in [0, 1)");
    std::int64_t in = skein::flat_size(args.data->input_shape);
    net_->push_back(torch::nn::Flatten());
    for (auto width : opt.get_int_list("hidden")) {
      if (width <= 0) opt.fail("hidden", "sizes must be positive");
      net_->push_back(torch::nn::Linear(in, width));
      net_->push_back(skein::make_activation(opt.get_string("activation"), opt.owner()));
      if (dropout > 0) net_->push_back(torch::nn::Dropout(dropout));
      in = width;
    }
    net_->push_back(torch::nn::Linear(in, args.data->num_classes));
    register_module("net", net_);
  }

  torch::Tensor forward(const torch::Tensor& inputs) override { return net_->forward(inputs); }

 private:
  torch::nn::Sequential net_;
};

}  // namespace

SKEIN_PLUGIN(Mlp, model, "mlp", "1.0.0", "Multi-layer perceptron on flattened inputs",
             SKEIN_OPTION("hidden", int_list, "[256, 128]", "Hidden layer widths"),
             SKEIN_OPTION("activation", string, "\"relu\"",
                          "relu, gelu, tanh, sigmoid, leaky_relu or elu"),
             SKEIN_OPTION("dropout", number, "0.0", "Dropout after each hidden layer, in [0, 1)"))
