#pragma once
// A dataset's own scaling of its raw inputs (skein::ScaledInputs, API 3.4:
// the idx dataset's (pixel / 255 - mean) / std). Asked of the dataset when
// training starts, kept in checkpoints (trainer.json "data_scaling"), applied
// by predict to raw inputs and built into exported TorchScript modules
// (model_io.hpp); export's JSON beside the model records it.
#include <optional>
#include <string>

#include <torch/types.h>

#include "skein/dataset.hpp"
#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"
#include "skein/run.hpp"

namespace skein::core {

// The scaling `data` declares, checked against its samples' shape `info`;
// nullopt when it declares none. Throws ConfigError naming `where`.
SKEIN_EXPORT std::optional<InputScale> declared_data_scaling(const Dataset& data, const DataInfo& info,
                                                             const std::string& where);

// {"divide_by": d, "mean": [...], "std": [...]}; an empty mean is [0], an empty std [1].
SKEIN_EXPORT nlohmann::json data_scaling_json(const InputScale& scale);
// The inverse, checked as declared_data_scaling checks; throws
// std::runtime_error naming `where`.
SKEIN_EXPORT InputScale data_scaling_from_json(const nlohmann::json& j, const DataInfo& info,
                                               const std::string& where);

// Raw `inputs` [N, ...] as the dataset hands them to the model (float32 unless
// they are floating point already).
SKEIN_EXPORT torch::Tensor apply_data_scaling(const InputScale& scale, const torch::Tensor& inputs);

// The mean or std of `scale` as a float32 tensor that broadcasts over
// batches of samples with `sample_dims` axes: [1], or [C, 1, ...] per channel.
SKEIN_EXPORT torch::Tensor data_scaling_mean(const InputScale& scale, std::int64_t sample_dims);
SKEIN_EXPORT torch::Tensor data_scaling_std(const InputScale& scale, std::int64_t sample_dims);

}  // namespace skein::core
