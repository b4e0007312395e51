#pragma once
// libtorch's autocast switches (CPU and CUDA) under both of its APIs; the one
// place that knows which a libtorch has.
//   1.13: at::autocast::set_cpu_enabled / set_enabled (CUDA),
//         set_autocast_cpu_dtype / set_autocast_gpu_dtype, ...
//   2.4+: set_autocast_enabled(device_type, ...), set_autocast_dtype(device_type, ...);
//         the per-device names remain as deprecated wrappers that warn on every call.
#include <ATen/autocast_mode.h>
#include <torch/csrc/api/include/torch/version.h>

// The device-generic calls came with libtorch 2.4.
#define SKEIN_TORCH_DEVICE_AUTOCAST_API (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4))

namespace skein::torch_compat {

// `type` is at::kCPU or at::kCUDA.
inline bool autocast_enabled(at::DeviceType type) {
#if !SKEIN_TORCH_DEVICE_AUTOCAST_API
  return type == at::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#else
  return at::autocast::is_autocast_enabled(type);
#endif
}

inline void set_autocast_enabled(at::DeviceType type, bool enabled) {
#if !SKEIN_TORCH_DEVICE_AUTOCAST_API
  if (type == at::kCUDA)
    at::autocast::set_enabled(enabled);
  else
    at::autocast::set_cpu_enabled(enabled);
#else
  at::autocast::set_autocast_enabled(type, enabled);
#endif
}

inline at::ScalarType autocast_dtype(at::DeviceType type) {
#if !SKEIN_TORCH_DEVICE_AUTOCAST_API
  return type == at::kCUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#else
  return at::autocast::get_autocast_dtype(type);
#endif
}

inline void set_autocast_dtype(at::DeviceType type, at::ScalarType dtype) {
#if !SKEIN_TORCH_DEVICE_AUTOCAST_API
  if (type == at::kCUDA)
    at::autocast::set_autocast_gpu_dtype(dtype);
  else
    at::autocast::set_autocast_cpu_dtype(dtype);
#else
  at::autocast::set_autocast_dtype(type, dtype);
#endif
}

}  // namespace skein::torch_compat
