// Callback "grad_clip": clips gradients after they are synced across ranks
// and before the optimizer step: by total norm, or element-wise by value.
// Records the total norm before clipping as batch key train_grad_norm (so the
// epoch value is its mean).
#include <torch/types.h>  // clip_grad.h is not self-contained in libtorch 1.13
#include <torch/nn/utils/clip_grad.h>

#include "skein/callback.hpp"
#include "skein/plugin.hpp"

namespace {

class GradClip final : public skein::Callback {
 public:
  explicit GradClip(const skein::PluginArgs& args)
      : mode_(args.options.get_string("mode")),
        max_norm_(args.options.get_number("max_norm")),
        norm_type_(args.options.get_number("norm_type")),
        clip_value_(args.options.get_number("clip_value")) {
    if (mode_ != "norm" && mode_ != "value") args.options.fail("mode", "must be norm or value");
    if (!(max_norm_ > 0)) args.options.fail("max_norm", "must be positive");
    if (!(norm_type_ > 0)) args.options.fail("norm_type", "must be positive");
    if (!(clip_value_ > 0)) args.options.fail("clip_value", "must be positive");
  }

  void on_train_begin(skein::TrainContext& ctx) override { key_ = ctx.history().batches().key("train_grad_norm"); }

  void on_grad_computed(skein::TrainContext& ctx, const skein::Batch& b) override {
    if (!b.training || !b.optimizer_step) return;  // partial gradients of accumulation
    auto params = ctx.model_base().parameters();
    double norm;
    if (mode_ == "norm") {
      norm = torch::nn::utils::clip_grad_norm_(params, max_norm_, norm_type_);
    } else {
      norm = torch::nn::utils::clip_grad_norm_(params, std::numeric_limits<double>::infinity(), norm_type_);
      torch::nn::utils::clip_grad_value_(params, clip_value_);
    }
    ctx.history().batches().put(key_, norm);
  }

 private:
  std::string mode_;
  double max_norm_, norm_type_, clip_value_;
  int key_ = 0;
};

}  // namespace

SKEIN_PLUGIN(GradClip, callback, "grad_clip", "1.0.0",
             "Clips synced gradients by total norm or by value before each optimizer step",
             SKEIN_OPTION("mode", string, "\"norm\"", "norm or value"),
             SKEIN_OPTION("max_norm", number, "1.0", "norm: largest total norm"),
             SKEIN_OPTION("norm_type", number, "2.0", "norm: p of the p-norm"),
             SKEIN_OPTION("clip_value", number, "1.0", "value: clamp every gradient to [-v, v]"))
