#include "skein/training/device/mixed_precision.hpp"

#include <stdexcept>

#include "skein/torch_compat/autocast.hpp"

namespace skein::core {

Precision precision_of(const std::string& name) {
  if (name == "32") return Precision::fp32;
  if (name == "bf16-mixed") return Precision::bf16_mixed;
  if (name == "16-mixed") return Precision::fp16_mixed;
  throw std::invalid_argument("precision: unknown value '" + name + "'");
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::bf16_mixed: return "bf16-mixed";
    case Precision::fp16_mixed: return "16-mixed";
    case Precision::fp32: break;
  }
  return "32";
}

MixedPrecisionScope::MixedPrecisionScope(Precision precision, bool on_cuda)
    : enabled_(precision != Precision::fp32), cuda_(on_cuda) {
  if (!enabled_) return;
  const auto type = cuda_ ? at::kCUDA : at::kCPU;
  was_enabled_ = torch_compat::autocast_enabled(type);
  was_dtype_ = static_cast<int>(torch_compat::autocast_dtype(type));
  torch_compat::set_autocast_enabled(type, true);
  torch_compat::set_autocast_dtype(type, precision == Precision::fp16_mixed ? at::kHalf : at::kBFloat16);
  at::autocast::increment_nesting();
}

MixedPrecisionScope::~MixedPrecisionScope() {
  if (!enabled_) return;
  const auto type = cuda_ ? at::kCUDA : at::kCPU;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  torch_compat::set_autocast_enabled(type, was_enabled_);
  torch_compat::set_autocast_dtype(type, static_cast<at::ScalarType>(was_dtype_));
}

}  // namespace skein::core
