#pragma once
// Helpers for dataset plugins: what a split's tensors say about the task, and
// the dtypes the trainer feeds models and losses.
#include <cstdint>
#include <string>

#include <torch/types.h>

#include "skein/detail/export.hpp"
#include "skein/dataset.hpp"
#include "skein/run.hpp"

namespace skein {

// DataInfo of a split whose inputs and targets are known: input shape from
// the inputs; integer targets [N] are class ids (`classes`, or the largest
// id + 1 when `classes` is 0), other targets are regression values (one
// output per value of a sample). Throws std::runtime_error naming `what` for
// targets of another length than the inputs.
SKEIN_EXPORT DataInfo infer_data_info(const torch::Tensor& inputs, const torch::Tensor& targets,
                                      std::int64_t classes, const std::string& what);

// Inputs as the trainer feeds them to models: float32 (floating inputs of
// another precision and integers are converted, values unchanged).
SKEIN_EXPORT torch::Tensor as_model_inputs(const torch::Tensor& inputs);
// Targets as losses take them: integers become int64 class ids, bool and
// floating targets float32.
SKEIN_EXPORT torch::Tensor as_loss_targets(const torch::Tensor& targets);
// Throws std::runtime_error naming `what` when a test split's samples have
// another shape than the training samples (`info.input_shape`).
SKEIN_EXPORT void check_test_shape(const DataInfo& info, const torch::Tensor& test_inputs, const std::string& what);
// The same for any held-out split, named in the message (API 2.4): "test", "validation".

}  // namespace skein
