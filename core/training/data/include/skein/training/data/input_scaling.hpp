#pragma once
// "standardize": true. The model sees (x - mean) / std per input feature
// (every element of a sample), with mean and std (population, as
// scikit-learn's StandardScaler; 1 where a feature is constant) of the
// training split, after valid_split has held its rows out. The trainer
// applies it before every forward, checkpoints record it (trainer.json
// "input_scaling"), and predict and export apply it too (an exported
// TorchScript module includes it).
#include <string>
#include <vector>

#include <torch/types.h>

#include "skein/training/data/data_split.hpp"
#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"

namespace skein::core {

struct SKEIN_EXPORT InputScaling {
  torch::Tensor mean, std;  // float32, one sample's shape; undefined: no scaling

  bool active() const { return mean.defined(); }
  // `inputs` [N, ...sample shape] scaled (as they are when not active).
  torch::Tensor apply(const torch::Tensor& inputs) const;
  // The same scaling with its tensors on `device` (the inputs' device).
  InputScaling on(const torch::Device& device) const;

  // {"mean": [...], "std": [...]}, flat, in the sample's element order.
  nlohmann::json to_json() const;
  // The inverse, for samples of `shape`; throws std::runtime_error naming `where`.
  static InputScaling from_json(const nlohmann::json& j, const std::vector<std::int64_t>& shape,
                                const std::string& where);
  // Mean and std of every sample of `split` (read in chunks; one pass).
  static InputScaling of(const DataSplit& split, const std::vector<std::int64_t>& shape);
};

}  // namespace skein::core
