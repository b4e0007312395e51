// A model: an MLP whose hidden blocks add their input back (x + f(x)).
#include <torch/torch.h>

#include <skein/model.hpp>
#include <skein/kit/nn_helpers.hpp>
#include <skein/plugin.hpp>

namespace {

class ResidualMlp final : public skein::Model {
 public:
  explicit ResidualMlp(const skein::PluginArgs& args) {
    const auto width = args.options.get_int("width");
    const auto blocks = args.options.get_int("blocks");
    if (width < 1) args.options.fail("width", "must be positive");
    if (blocks < 0) args.options.fail("blocks", "must be >= 0");
    input_ = register_module("input", torch::nn::Linear(skein::flat_size(args.data->input_shape), width));
    for (std::int64_t i = 0; i < blocks; ++i)
      blocks_.push_back(register_module("block" + std::to_string(i), torch::nn::Linear(width, width)));
    output_ = register_module("output", torch::nn::Linear(width, args.data->num_classes));
  }

  torch::Tensor forward(const torch::Tensor& inputs) override {
    auto x = torch::relu(input_->forward(inputs.flatten(1)));
    for (auto& block : blocks_) x = x + torch::relu(block->forward(x));
    return output_->forward(x);
  }

 private:
  torch::nn::Linear input_{nullptr}, output_{nullptr};
  std::vector<torch::nn::Linear> blocks_;
};

}  // namespace

SKEIN_PLUGIN(ResidualMlp, model, "residual_mlp", "1.0.0", "MLP with residual hidden blocks",
             SKEIN_OPTION("width", integer, "64", "Width of every hidden layer"),
             SKEIN_OPTION("blocks", integer, "2", "Residual blocks"))
