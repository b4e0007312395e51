#include "skein/kit/nn_helpers.hpp"

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/dropout.h>

#include <cstdio>

#include "skein/errors.hpp"
#include "skein/io/memory.hpp"

namespace skein {

torch::nn::AnyModule make_activation(const std::string& name, const std::string& owner) {
  if (name == "relu") return torch::nn::AnyModule(torch::nn::ReLU());
  if (name == "gelu") return torch::nn::AnyModule(torch::nn::GELU());
  if (name == "tanh") return torch::nn::AnyModule(torch::nn::Tanh());
  if (name == "sigmoid") return torch::nn::AnyModule(torch::nn::Sigmoid());
  if (name == "leaky_relu") return torch::nn::AnyModule(torch::nn::LeakyReLU());
  if (name == "elu") return torch::nn::AnyModule(torch::nn::ELU());
  throw OptionError("activation", owner + ": option 'activation' must be one of relu, gelu, tanh, sigmoid, "
                    "leaky_relu, elu; got '" + name + "'");
}

std::int64_t flat_size(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

double require_probability(const Options& options, const std::string& key, double value) {
  if (!(value >= 0 && value < 1)) options.fail(key, "must be in [0, 1), got " + std::to_string(value));
  return value;
}

double linear_parameters(double in, double out) { return in * out + out; }

double conv2d_parameters(double in, double out, double k) { return in * out * k * k + out; }

void check_parameters_fit(const Options& options, const std::string& key, double parameters) {
  const double bytes = parameters * sizeof(float);
  const auto memory = physical_memory_bytes();
  if (bytes <= static_cast<double>(memory)) return;
  char count[32];
  std::snprintf(count, sizeof count, "%.3g", parameters);
  options.fail(key, "is too large: the model would need " + format_bytes(bytes) + " of parameters (" + count +
                        " float32 values), more than this machine's " + format_bytes(static_cast<double>(memory)) +
                        " of memory");
}

SequentialModel::SequentialModel() { register_module("net", net_); }
SequentialModel::~SequentialModel() = default;

torch::Tensor SequentialModel::forward(const torch::Tensor& inputs) { return net_->forward(inputs); }

void SequentialModel::add_activation_and_dropout(const std::string& activation, double p,
                                                 const std::string& owner) {
  net_->push_back(make_activation(activation, owner));
  if (p > 0) net_->push_back(torch::nn::Dropout(p));
}

}  // namespace skein
