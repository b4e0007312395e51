#include "skein/kit/datasets.hpp"

#include <stdexcept>

namespace skein {

DataInfo infer_data_info(const torch::Tensor& inputs, const torch::Tensor& targets, std::int64_t classes,
                         const std::string& what) {
  if (inputs.dim() < 1 || targets.dim() < 1 || inputs.size(0) != targets.size(0))
    throw std::runtime_error(what + ": " + std::to_string(inputs.dim() ? inputs.size(0) : 0) + " inputs but " +
                             std::to_string(targets.dim() ? targets.size(0) : 0) + " targets");
  DataInfo info;
  info.input_shape = inputs.sizes().slice(1).vec();
  const bool class_ids = !targets.is_floating_point() && targets.scalar_type() != torch::kBool && targets.dim() == 1;
  if (class_ids) {
    const std::int64_t largest = targets.numel() ? targets.max().item<std::int64_t>() : -1;
    info.num_classes = classes > 0 ? classes : largest + 1;
  } else {
    info.num_classes = 1;
    for (auto extent : targets.sizes().slice(1)) info.num_classes *= extent;
  }
  return info;
}

torch::Tensor as_model_inputs(const torch::Tensor& inputs) {
  return inputs.scalar_type() == torch::kFloat ? inputs : inputs.to(torch::kFloat);
}

torch::Tensor as_loss_targets(const torch::Tensor& targets) {
  if (targets.is_floating_point() || targets.scalar_type() == torch::kBool)
    return targets.scalar_type() == torch::kFloat ? targets : targets.to(torch::kFloat);
  return targets.scalar_type() == torch::kLong ? targets : targets.to(torch::kLong);
}

void check_test_shape(const DataInfo& info, const torch::Tensor& test_inputs, const std::string& what) {
  check_held_out_shape(info, test_inputs, what, "test");
}

}  // namespace skein
