// libresidual_mlp_net: the one home of ResidualMlp (residual_mlp.hpp).
#include "residual_mlp.hpp"

#include <cmath>

#include <torch/torch.h>

ResidualMlp::ResidualMlp(std::int64_t inputs, std::int64_t width, std::int64_t blocks, std::int64_t classes) {
  input_ = register_module("input", torch::nn::Linear(inputs, width));
  for (std::int64_t i = 0; i < blocks; ++i)
    blocks_.push_back(register_module("block" + std::to_string(i), torch::nn::Linear(width, width)));
  output_ = register_module("output", torch::nn::Linear(width, classes));
}

ResidualMlp::~ResidualMlp() = default;

torch::Tensor ResidualMlp::forward(const torch::Tensor& inputs) {
  auto x = torch::relu(input_->forward(inputs.flatten(1)));
  for (auto& block : blocks_) x = x + torch::relu(block->forward(x));
  return output_->forward(x);
}

double ResidualMlp::block_weight_norm() const {
  double squares = 0;
  for (const auto& block : blocks_) squares += block->weight.square().sum().item<double>();
  return std::sqrt(squares);
}
