#include "skein/core/mixed_precision.hpp"

#include <ATen/autocast_mode.h>

namespace skein::core {

MixedPrecisionScope::MixedPrecisionScope(bool enabled) : enabled_(enabled) {
  if (!enabled_) return;
  was_enabled_ = at::autocast::is_cpu_enabled();
  was_dtype_ = static_cast<int>(at::autocast::get_autocast_cpu_dtype());
  at::autocast::set_cpu_enabled(true);
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  at::autocast::increment_nesting();
}

MixedPrecisionScope::~MixedPrecisionScope() {
  if (!enabled_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_cpu_enabled(was_enabled_);
  at::autocast::set_autocast_cpu_dtype(static_cast<at::ScalarType>(was_dtype_));
}

}  // namespace skein::core
