#include "skein/training/data/input_scaling.hpp"

#include <cmath>
#include <numeric>

#include <torch/types.h>

namespace skein::core {

torch::Tensor InputScaling::apply(const torch::Tensor& inputs) const {
  if (!active()) return inputs;
  return (inputs - mean) / std;
}

InputScaling InputScaling::on(const torch::Device& device) const {
  if (!active()) return *this;
  return InputScaling{mean.to(device), std.to(device)};
}

nlohmann::json InputScaling::to_json() const {
  auto flat = [](const torch::Tensor& t) {
    const auto d = t.to(torch::kCPU, torch::kFloat64).contiguous().reshape({-1});
    return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
  };
  return {{"mean", flat(mean)}, {"std", flat(std)}};
}

InputScaling InputScaling::from_json(const nlohmann::json& j, const std::vector<std::int64_t>& shape,
                                     const std::string& where) {
  const auto n = std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
  auto read = [&](const char* key, bool positive) {
    const auto it = j.is_object() ? j.find(key) : j.end();
    if (it == j.end() || !it->is_array() || static_cast<std::int64_t>(it->size()) != n)
      throw std::runtime_error(where + ": \"input_scaling\"." + key + " must hold " + std::to_string(n) + " numbers");
    std::vector<float> values;
    for (const auto& v : *it) {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || (positive && !(v.get<double>() > 0)))
        throw std::runtime_error(where + ": \"input_scaling\"." + key + " holds " + v.dump() +
                                 (positive ? ", not a positive number" : ", not a finite number"));
      values.push_back(v.get<float>());
    }
    return torch::tensor(values, torch::kFloat32).reshape(shape);
  };
  InputScaling s;
  s.mean = read("mean", false);
  s.std = read("std", true);
  return s;
}

InputScaling InputScaling::of(const DataSplit& split, const std::vector<std::int64_t>& shape) {
  // Chunks merged with Chan et al.'s update of count, mean and sum of squared
  // deviations: stable in one pass, in float64.
  const std::int64_t n = split.size();
  constexpr std::int64_t kChunk = 4096;
  torch::Tensor mean, m2;
  double count = 0;
  for (std::int64_t lo = 0; lo < n; lo += kChunk) {
    std::vector<std::int64_t> rows(static_cast<std::size_t>(std::min(kChunk, n - lo)));
    std::iota(rows.begin(), rows.end(), lo);
    const torch::Tensor x = split.fetch(rows, FetchOptions{}).inputs.to(torch::kFloat64);
    const auto b = static_cast<double>(x.size(0));
    const torch::Tensor chunk_mean = x.mean(0);
    const torch::Tensor chunk_m2 = (x - chunk_mean).square().sum(0);
    if (!mean.defined()) {
      mean = chunk_mean, m2 = chunk_m2;
    } else {
      const torch::Tensor delta = chunk_mean - mean;
      mean = mean + delta * (b / (count + b));
      m2 = m2 + chunk_m2 + delta.square() * (count * b / (count + b));
    }
    count += b;
  }
  InputScaling s;
  if (!mean.defined()) return s;
  torch::Tensor std = (m2 / count).sqrt();
  std = torch::where(std > 0, std, torch::ones_like(std));  // a constant feature stays as it is, centred
  s.mean = mean.to(torch::kFloat32).reshape(shape);
  s.std = std.to(torch::kFloat32).reshape(shape);
  return s;
}

}  // namespace skein::core
