#include "skein/training/device/loss_scaler.hpp"

#include <map>
#include <utility>
#include <vector>

#include <ATen/Functions.h>
#include <torch/utils.h>

namespace skein::core {

LossScaler::LossScaler(bool enabled, const torch::Device& device, Options options)
    : enabled_(enabled), options_(options) {
  if (!enabled_) return;
  const auto on = torch::TensorOptions().device(device);
  scale_ = torch::full({1}, options_.init_scale, on.dtype(torch::kFloat32));
  growth_tracker_ = torch::zeros({1}, on.dtype(torch::kInt32));
  found_inf_ = torch::zeros({1}, on.dtype(torch::kFloat32));
}

torch::Tensor LossScaler::scale(const torch::Tensor& loss) const {
  if (!enabled_) return loss;
  return loss * scale_.to(loss.scalar_type());
}

bool LossScaler::unscale(torch::optim::Optimizer& optimizer) {
  if (!enabled_) return true;
  torch::NoGradGuard no_grad;
  found_inf_.zero_();
  const torch::Tensor inv_scale = scale_.to(torch::kFloat64).reciprocal().to(torch::kFloat32);
  // libtorch's kernel takes gradients of one device and dtype per call.
  std::map<std::pair<std::string, int>, std::vector<torch::Tensor>> groups;
  for (const auto& group : optimizer.param_groups())
    for (const auto& p : group.params())
      if (p.grad().defined())
        groups[{p.grad().device().str(), static_cast<int>(p.grad().scalar_type())}].push_back(p.grad());
  for (auto& [key, grads] : groups) {
    torch::Tensor found = torch::zeros({1}, found_inf_.options().device(grads.front().device()));
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found, inv_scale.to(grads.front().device()));
    found_inf_.add_(found.to(found_inf_.device()));
  }
  const bool finite = found_inf_.item<float>() == 0.0f;
  if (!finite) ++skipped_;
  return finite;
}

void LossScaler::update() {
  if (!enabled_) return;
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, options_.growth_factor, options_.backoff_factor,
                         options_.growth_interval);
  found_inf_.zero_();
}

double LossScaler::current_scale() const { return enabled_ ? scale_.item<double>() : 1.0; }

std::int64_t LossScaler::growth_tracker() const { return enabled_ ? growth_tracker_.item<std::int64_t>() : 0; }

void LossScaler::restore(double scale, std::int64_t growth_tracker) {
  if (!enabled_) return;
  scale_.fill_(scale);
  growth_tracker_.fill_(growth_tracker);
}

std::int64_t LossScaler::take_skipped() { return std::exchange(skipped_, 0); }

}  // namespace skein::core
