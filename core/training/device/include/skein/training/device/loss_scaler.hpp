#pragma once
// precision "16-mixed": dynamic loss scaling, as PyTorch's GradScaler does it
// (and with its defaults). The loss is multiplied by the scale before
// backward, so that small float16 gradients do not flush to zero; before the
// optimizer steps, the gradients are divided by it and checked: with an inf
// or NaN among them the step is skipped and the scale halves; after
// `growth_interval` good steps in a row it doubles. Both checks are
// libtorch's own kernels (_amp_foreach_non_finite_check_and_unscale_,
// _amp_update_scale_), on the gradients' device.
#include <cstdint>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "skein/detail/export.hpp"

namespace skein::core {

class SKEIN_EXPORT LossScaler {
 public:
  struct Options {
    double init_scale = 65536.0;  // 2^16
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    std::int64_t growth_interval = 2000;
  };
  // Disabled: scale() and unscale() change nothing, update() does nothing.
  LossScaler(bool enabled, const torch::Device& device, Options options);
  LossScaler(bool enabled, const torch::Device& device) : LossScaler(enabled, device, Options{}) {}

  bool enabled() const { return enabled_; }
  // loss * scale.
  torch::Tensor scale(const torch::Tensor& loss) const;
  // Divides every gradient of `optimizer`'s parameters by the scale; true
  // when all of them are finite (the optimizer may step). One host sync.
  bool unscale(torch::optim::Optimizer& optimizer);
  // After each optimizer step, taken or skipped.
  void update();
  double current_scale() const;
  // Good steps in a row since the scale last changed (0 when disabled).
  std::int64_t growth_tracker() const;
  // Continues from a checkpoint's scale and count (an enabled scaler only).
  void restore(double scale, std::int64_t growth_tracker);
  // Steps skipped (non-finite gradients) since the last call.
  std::int64_t take_skipped();

 private:
  bool enabled_;
  Options options_;
  torch::Tensor scale_;           // float32 [1] on the device
  torch::Tensor growth_tracker_;  // int32 [1]: good steps in a row
  torch::Tensor found_inf_;       // float32 [1]: of the last unscale
  std::int64_t skipped_ = 0;
};

}  // namespace skein::core
