#pragma once
// precision "bf16-mixed": the model's forward and the loss run under libtorch's
// CPU autocast to bfloat16 (matrix products and convolutions in bfloat16,
// reductions and losses in float32, as autocast's op lists decide), while
// parameters, gradients, optimizer state and checkpoints stay float32.
#include "skein/detail/export.hpp"

namespace skein::core {

// Autocast on for its lifetime when `enabled` (nests like PyTorch's
// torch.autocast). The outermost scope clears autocast's cache of bfloat16
// weight copies on exit, so every step casts the updated weights anew.
class SKEIN_EXPORT MixedPrecisionScope {
 public:
  explicit MixedPrecisionScope(bool enabled);
  ~MixedPrecisionScope();
  MixedPrecisionScope(const MixedPrecisionScope&) = delete;
  MixedPrecisionScope& operator=(const MixedPrecisionScope&) = delete;

 private:
  bool enabled_;
  bool was_enabled_ = false;
  int was_dtype_ = 0;  // at::ScalarType before the scope
};

}  // namespace skein::core
