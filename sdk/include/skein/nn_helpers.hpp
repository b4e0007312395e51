#pragma once
// Small building blocks shared by model plugins.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/modules/container/any.h>

#include "skein/export.hpp"

namespace skein {

// "relu", "gelu", "tanh", "sigmoid", "leaky_relu", "elu"; throws ConfigError
// naming `owner` for anything else.
SKEIN_EXPORT torch::nn::AnyModule make_activation(const std::string& name, const std::string& owner);

// Product of a shape's extents (the flattened feature count).
SKEIN_EXPORT std::int64_t flat_size(const std::vector<std::int64_t>& shape);

}  // namespace skein
