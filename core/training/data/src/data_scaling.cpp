#include "skein/training/data/data_scaling.hpp"

#include <cmath>

#include "skein/errors.hpp"

namespace skein::core {

namespace {

// What is wrong with `scale` for samples of `info`, or "".
std::string problem(const InputScale& scale, const DataInfo& info) {
  if (!std::isfinite(scale.divide_by) || !(scale.divide_by > 0))
    return "divide_by must be a positive number, got " + std::to_string(scale.divide_by);
  const auto channels = info.input_shape.empty() ? 1 : info.input_shape.front();
  for (const auto* values : {&scale.mean, &scale.std}) {
    const char* name = values == &scale.mean ? "mean" : "std";
    if (values->size() > 1 && static_cast<std::int64_t>(values->size()) != channels)
      return std::string(name) + " holds " + std::to_string(values->size()) + " values; expected 1 or one per channel (" +
             std::to_string(channels) + ")";
    for (const double v : *values)
      if (!std::isfinite(v) || (values == &scale.std && !(v > 0)))
        return std::string(name) + " holds " + std::to_string(v) +
               (values == &scale.std ? ", not a positive number" : ", not a finite number");
  }
  return "";
}

// [1] (`none` when `values` is empty), or one value per channel, [C, 1, ...].
torch::Tensor broadcastable(std::vector<double> values, std::int64_t sample_dims, double none) {
  if (values.empty()) values = {none};
  std::vector<std::int64_t> shape{static_cast<std::int64_t>(values.size())};
  if (values.size() > 1) shape.resize(static_cast<std::size_t>(std::max<std::int64_t>(sample_dims, 1)), 1);
  return torch::tensor(values, torch::kFloat64).to(torch::kFloat32).reshape(shape);
}

}  // namespace

std::optional<InputScale> declared_data_scaling(const Dataset& data, const DataInfo& info, const std::string& where) {
  const auto* scaled = dynamic_cast<const ScaledInputs*>(&data);
  if (!scaled) return std::nullopt;
  InputScale scale = scaled->input_scale();
  if (const std::string p = problem(scale, info); !p.empty())
    throw ConfigError(where + ": its declared input scale is wrong: " + p);
  return scale;
}

nlohmann::json data_scaling_json(const InputScale& scale) {
  // Never empty, so that a reader need not know the defaults.
  return {{"divide_by", scale.divide_by},
          {"mean", scale.mean.empty() ? std::vector<double>{0.0} : scale.mean},
          {"std", scale.std.empty() ? std::vector<double>{1.0} : scale.std}};
}

InputScale data_scaling_from_json(const nlohmann::json& j, const DataInfo& info, const std::string& where) {
  InputScale scale;
  try {
    scale.divide_by = j.at("divide_by").get<double>();
    scale.mean = j.at("mean").get<std::vector<double>>();
    scale.std = j.at("std").get<std::vector<double>>();
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(where + ": \"data_scaling\" must be {\"divide_by\": number, \"mean\": [numbers], "
                             "\"std\": [numbers]}, got " + j.dump());
  }
  if (const std::string p = problem(scale, info); !p.empty())
    throw std::runtime_error(where + ": \"data_scaling\": " + p);
  return scale;
}

torch::Tensor apply_data_scaling(const InputScale& scale, const torch::Tensor& inputs) {
  // The operations a dataset does (idx: to float, / 255, - mean, / std), so the same floats.
  const torch::Tensor x = (inputs.is_floating_point() ? inputs : inputs.to(torch::kFloat32)).div(scale.divide_by);
  const auto like = torch::TensorOptions().device(x.device()).dtype(x.scalar_type());
  return x.sub(data_scaling_mean(scale, x.dim() - 1).to(like)).div(data_scaling_std(scale, x.dim() - 1).to(like));
}

torch::Tensor data_scaling_mean(const InputScale& scale, std::int64_t sample_dims) {
  return broadcastable(scale.mean, sample_dims, 0.0);
}

torch::Tensor data_scaling_std(const InputScale& scale, std::int64_t sample_dims) {
  return broadcastable(scale.std, sample_dims, 1.0);
}

}  // namespace skein::core
