// Callback "grad_clip": clips gradients after they are synced across ranks
// and before the optimizer step: by total norm, or element-wise by value.
// Records the total norm before clipping as batch key train_grad_norm (so the
// epoch value is its mean).
#include <torch/types.h>  // clip_grad.h is not self-contained in libtorch 1.13
#include <torch/nn/utils/clip_grad.h>

#include "skein/callback.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema below and GradClipOptions' typed fields.
#define GRAD_CLIP_OPTIONS(X)                                                                   \
  X(mode, choice, "\"norm\"", "Clip the total norm or each value", SKEIN_CHOICES("norm|value")) \
  X(max_norm, number, "1.0", "norm: largest total norm", SKEIN_RANGE("(0, )"))                 \
  X(norm_type, number, "2.0", "norm: p of the p-norm", SKEIN_RANGE("(0, )"))                   \
  X(clip_value, number, "1.0", "value: clamp every gradient to [-v, v]", SKEIN_RANGE("(0, )"))

namespace {

SKEIN_OPTIONS_STRUCT(GradClipOptions, GRAD_CLIP_OPTIONS)

class GradClip final : public skein::Callback {
 public:
  explicit GradClip(const skein::PluginArgs& args) : o_(args.options) {}

  void on_train_begin(skein::TrainContext& ctx) override { key_ = ctx.history().batches().key("train_grad_norm"); }

  void on_grad_computed(skein::TrainContext& ctx, const skein::Batch& b) override {
    if (!b.training || !b.optimizer_step) return;  // partial gradients of accumulation
    auto params = ctx.model_base().parameters();
    double norm;
    if (o_.mode == "norm") {
      norm = torch::nn::utils::clip_grad_norm_(params, o_.max_norm, o_.norm_type);
    } else {
      norm = torch::nn::utils::clip_grad_norm_(params, std::numeric_limits<double>::infinity(), o_.norm_type);
      torch::nn::utils::clip_grad_value_(params, o_.clip_value);
    }
    ctx.history().batches().put(key_, norm);
  }

 private:
  GradClipOptions o_;
  int key_ = 0;
};

}  // namespace

SKEIN_PLUGIN(GradClip, callback, "grad_clip", "1.0.0",
             "Clips synced gradients by total norm or by value before each optimizer step",
             SKEIN_OPTION_SPECS(GRAD_CLIP_OPTIONS))
