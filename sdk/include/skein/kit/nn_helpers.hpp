#pragma once
// Small building blocks shared by model plugins.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>

#include "skein/detail/export.hpp"
#include "skein/kit/option_lists.hpp"  // SKEIN_ACTIVATION_OPTION
#include "skein/model.hpp"
#include "skein/options.hpp"

namespace skein {

// "relu", "gelu", "tanh", "sigmoid", "leaky_relu", "elu"; throws ConfigError
// naming `owner` for anything else.
SKEIN_EXPORT torch::nn::AnyModule make_activation(const std::string& name, const std::string& owner);

// Product of a shape's extents (the flattened feature count).
SKEIN_EXPORT std::int64_t flat_size(const std::vector<std::int64_t>& shape);

// Checks that option `key`'s value (a probability, e.g. dropout) is in
// [0, 1), failing with the option named; returns it.
SKEIN_EXPORT double require_probability(const Options& options, const std::string& key, double value);

// Parameter counts, biases included, of Linear(in, out) and of a k x k
// Conv2d(in, out), in double: sizes from a config may overflow any integer.
SKEIN_EXPORT double linear_parameters(double in, double out);
SKEIN_EXPORT double conv2d_parameters(double in, double out, double k);

// Throws ConfigError naming the options' owner and `key` when `parameters`
// float32 values would take more than this machine's memory. Call it before
// building the layers: libtorch allocates each layer as it is made.
SKEIN_EXPORT void check_parameters_fit(const Options& options, const std::string& key, double parameters);

// A model whose forward pass is one torch::nn::Sequential, registered as "net"
// (so parameters are named net.0.weight, net.0.bias, ...).
class SKEIN_EXPORT SequentialModel : public Model {
 public:
  SequentialModel();
  ~SequentialModel() override;
  torch::Tensor forward(const torch::Tensor& inputs) override;

 protected:
  // Appends activation(name) and, when p > 0, Dropout(p).
  void add_activation_and_dropout(const std::string& activation, double p, const std::string& owner);
  torch::nn::Sequential net_;
};

}  // namespace skein
