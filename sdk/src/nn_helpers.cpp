#include "skein/nn_helpers.hpp"

#include <torch/nn/modules/activation.h>

#include "skein/errors.hpp"

namespace skein {

torch::nn::AnyModule make_activation(const std::string& name, const std::string& owner) {
  if (name == "relu") return torch::nn::AnyModule(torch::nn::ReLU());
  if (name == "gelu") return torch::nn::AnyModule(torch::nn::GELU());
  if (name == "tanh") return torch::nn::AnyModule(torch::nn::Tanh());
  if (name == "sigmoid") return torch::nn::AnyModule(torch::nn::Sigmoid());
  if (name == "leaky_relu") return torch::nn::AnyModule(torch::nn::LeakyReLU());
  if (name == "elu") return torch::nn::AnyModule(torch::nn::ELU());
  throw ConfigError(owner + ": option 'activation' must be one of relu, gelu, tanh, sigmoid, "
                    "leaky_relu, elu; got '" + name + "'");
}

std::int64_t flat_size(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

}  // namespace skein
