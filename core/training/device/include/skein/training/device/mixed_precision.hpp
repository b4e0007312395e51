#pragma once
// The config's "precision":
//   "32"          float32 throughout
//   "bf16-mixed"  the model's forward and the loss under libtorch's autocast to
//                 bfloat16 on the run's device (CPU or CUDA): matrix products
//                 and convolutions in bfloat16, reductions and losses in
//                 float32, as autocast's op lists decide
//   "16-mixed"    the same with float16, CUDA only, and dynamic loss scaling
//                 (loss_scaler.hpp), as PyTorch's GradScaler
// Parameters, gradients, optimizer state and checkpoints stay float32.
#include <string>

#include "skein/detail/export.hpp"

namespace skein::core {

enum class Precision { fp32, bf16_mixed, fp16_mixed };

// From the config's spelling (checked against the schema's choices before).
SKEIN_EXPORT Precision precision_of(const std::string& name);
SKEIN_EXPORT const char* precision_name(Precision precision);

// Autocast on for its lifetime when `precision` is mixed, for the CPU or
// CUDA (nests like PyTorch's torch.autocast). The outermost scope clears
// autocast's cache of low-precision weight copies on exit, so every step
// casts the updated weights anew.
class SKEIN_EXPORT MixedPrecisionScope {
 public:
  MixedPrecisionScope(Precision precision, bool on_cuda);
  ~MixedPrecisionScope();
  MixedPrecisionScope(const MixedPrecisionScope&) = delete;
  MixedPrecisionScope& operator=(const MixedPrecisionScope&) = delete;

 private:
  bool enabled_;
  bool cuda_;
  bool was_enabled_ = false;
  int was_dtype_ = 0;  // at::ScalarType before the scope
};

}  // namespace skein::core
