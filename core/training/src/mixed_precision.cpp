#include "skein/training/mixed_precision.hpp"

#include "skein/torch_compat/autocast.hpp"

namespace skein::core {

MixedPrecisionScope::MixedPrecisionScope(bool enabled) : enabled_(enabled) {
  if (!enabled_) return;
  was_enabled_ = torch_compat::cpu_autocast_enabled();
  was_dtype_ = static_cast<int>(torch_compat::cpu_autocast_dtype());
  torch_compat::set_cpu_autocast_enabled(true);
  torch_compat::set_cpu_autocast_dtype(at::kBFloat16);
  at::autocast::increment_nesting();
}

MixedPrecisionScope::~MixedPrecisionScope() {
  if (!enabled_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  torch_compat::set_cpu_autocast_enabled(was_enabled_);
  torch_compat::set_cpu_autocast_dtype(static_cast<at::ScalarType>(was_dtype_));
}

}  // namespace skein::core
