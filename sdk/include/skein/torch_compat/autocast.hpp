#pragma once
// libtorch's CPU autocast switches under both of its APIs; the one place that
// knows which a libtorch has.
//   1.13: at::autocast::set_cpu_enabled, set_autocast_cpu_dtype, ...
//   2.4+: set_autocast_enabled(at::kCPU, ...), set_autocast_dtype(at::kCPU, ...);
//         the *_cpu_* names remain as deprecated wrappers that warn on every call.
#include <ATen/autocast_mode.h>
#include <torch/csrc/api/include/torch/version.h>

// The device-generic calls came with libtorch 2.4.
#define SKEIN_TORCH_DEVICE_AUTOCAST_API (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4))

namespace skein::torch_compat {

inline bool cpu_autocast_enabled() {
#if !SKEIN_TORCH_DEVICE_AUTOCAST_API
  return at::autocast::is_cpu_enabled();
#else
  return at::autocast::is_autocast_enabled(at::kCPU);
#endif
}

inline void set_cpu_autocast_enabled(bool enabled) {
#if !SKEIN_TORCH_DEVICE_AUTOCAST_API
  at::autocast::set_cpu_enabled(enabled);
#else
  at::autocast::set_autocast_enabled(at::kCPU, enabled);
#endif
}

inline at::ScalarType cpu_autocast_dtype() {
#if !SKEIN_TORCH_DEVICE_AUTOCAST_API
  return at::autocast::get_autocast_cpu_dtype();
#else
  return at::autocast::get_autocast_dtype(at::kCPU);
#endif
}

inline void set_cpu_autocast_dtype(at::ScalarType dtype) {
#if !SKEIN_TORCH_DEVICE_AUTOCAST_API
  at::autocast::set_autocast_cpu_dtype(dtype);
#else
  at::autocast::set_autocast_dtype(at::kCPU, dtype);
#endif
}

}  // namespace skein::torch_compat
