#pragma once
// State dicts: {name: tensor} files shared with Python, and loading one into a
// model with every name and shape checked.
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "skein/detail/export.hpp"

namespace skein::core {

using StateDict = std::vector<std::pair<std::string, torch::Tensor>>;

// Reads a file written by Python's torch.save(model.state_dict()) (an
// OrderedDict, which libtorch's own reader cannot take), by torch.save of a
// plain dict, or skein's model_state_dict.pt. Throws ConfigError naming the file.
SKEIN_EXPORT StateDict read_state_dict(const std::string& path);

// The model's parameters and buffers by name, as bytes Python's torch.load
// reads: written to `out` as they are made (a checkpoint's file), or whole.
SKEIN_EXPORT void write_state_dict(torch::nn::Module& model, std::ostream& out);
// ... of `named` (the model's named_tensors, or copies of them).
SKEIN_EXPORT void write_state_dict(const StateDict& named, std::ostream& out);
// The model's parameters, then its buffers, by name (the state dict's entries).
SKEIN_EXPORT StateDict named_tensors(const torch::nn::Module& model);
SKEIN_EXPORT std::string state_dict_bytes(torch::nn::Module& model);

// Copies `dict` into the model's parameters and buffers. Names and shapes
// must match exactly; otherwise throws ConfigError "<where>: ..." listing
// every missing, unexpected and mis-shaped entry.
SKEIN_EXPORT void load_state_dict(torch::nn::Module& model, const StateDict& dict, const std::string& where);

}  // namespace skein::core
