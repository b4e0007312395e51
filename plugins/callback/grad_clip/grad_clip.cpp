// Callback "grad_clip": clips gradients after they are synced across ranks
// and before the optimizer step: by total norm, or element-wise by value.
// Records the total norm before clipping as batch key train_grad_norm (so the
// epoch value is its mean).
//
// The total norm is the whole model's. Under a wrapper that shards the
// optimizer (skein::ShardedOptimizer, `zero`) a rank may hold only its own
// parameters' averaged gradients (`zero` stage 2): each parameter's norm is
// then taken on its owner, which holds its whole gradient when the optimizer
// steps, and the sum over ranks is every rank's total.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <torch/types.h>  // clip_grad.h is not self-contained in libtorch 1.13
#include <torch/nn/utils/clip_grad.h>
#include <torch/utils.h>

#include "skein/callback.hpp"
#include "skein/parallel.hpp"
#include "skein/plugin.hpp"
#include "skein/run.hpp"

// Declared once: the schema below and GradClipOptions' typed fields.
#define GRAD_CLIP_OPTIONS(X)                                                                   \
  X(mode, choice, "\"norm\"", "Clip the total norm or each value", SKEIN_CHOICES("norm|value")) \
  X(max_norm, number, "1.0", "norm: largest total norm", SKEIN_RANGE("(0, )"))                 \
  X(norm_type, number, "2.0", "norm: p of the p-norm", SKEIN_RANGE("(0, )"))                   \
  X(clip_value, number, "1.0", "value: clamp every gradient to [-v, v]", SKEIN_RANGE("(0, )"))

namespace {

SKEIN_OPTIONS_STRUCT(GradClipOptions, GRAD_CLIP_OPTIONS)

class GradClip final : public skein::Callback, public skein::WorldChangeListener {
 public:
  explicit GradClip(const skein::PluginArgs& args) : o_(args.options) {}

  void on_train_begin(skein::TrainContext& ctx) override { key_ = ctx.history().batches().key("train_grad_norm"); }

  void on_grad_computed(skein::TrainContext& ctx, const skein::Batch& b) override {
    if (!b.training || !b.optimizer_step) return;  // partial gradients of accumulation
    auto params = ctx.model_base().parameters();
    auto* sharded = ctx.run().world_size > 1 ? dynamic_cast<skein::ShardedOptimizer*>(&ctx.parallel()) : nullptr;
    double norm;
    if (sharded) {
      norm = sharded_norm(ctx, *sharded, params);
      // torch::nn::utils::clip_grad_norm_'s factor, on every gradient this rank holds.
      const double factor = o_.mode == "norm" ? std::min(1.0, o_.max_norm / (norm + 1e-6)) : 1.0;
      torch::NoGradGuard no_grad;
      if (factor < 1)
        for (auto& p : params)
          if (p.grad().defined()) p.mutable_grad().mul_(factor);
    } else if (o_.mode == "norm") {
      norm = torch::nn::utils::clip_grad_norm_(params, o_.max_norm, o_.norm_type);
    } else {
      norm = torch::nn::utils::clip_grad_norm_(params, std::numeric_limits<double>::infinity(), o_.norm_type);
    }
    if (o_.mode == "value") torch::nn::utils::clip_grad_value_(params, o_.clip_value);
    ctx.history().batches().put(key_, norm);
  }

  // Live recovery: another membership has other owners.
  void on_world_change(const skein::RunInfo&, std::int64_t) override { owners_.clear(); }

 private:
  // The norm_type-norm of the whole model's gradient: each parameter's norm
  // to the p on the rank that owns it (its first element's owner, which holds
  // its whole gradient), summed over ranks. A collective: every rank clips
  // at the same batches.
  double sharded_norm(skein::TrainContext& ctx, skein::ShardedOptimizer& sharded,
                      const std::vector<torch::Tensor>& params) {
    // Owners are fixed for a membership: asked once, not at every step.
    if (owners_.empty()) owners_ = sharded.parameter_owners(params);
    const std::vector<int>& owners = owners_;
    const int rank = ctx.run().rank;
    std::vector<double> sum{0.0};
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (owners[i] != rank || !params[i].grad().defined()) continue;
      const double n = params[i].grad().detach().norm(o_.norm_type).item<double>();
      sum[0] += std::pow(n, o_.norm_type);
    }
    ctx.parallel().all_reduce_sum(sum);
    return std::pow(sum[0], 1.0 / o_.norm_type);
  }

  GradClipOptions o_;
  int key_ = 0;
  std::vector<int> owners_;  // each parameter's owner under a ShardedOptimizer
};

}  // namespace

SKEIN_PLUGIN(GradClip, callback, "grad_clip", "1.1.1",
             "Clips synced gradients by total norm or by value before each optimizer step",
             SKEIN_OPTION_SPECS(GRAD_CLIP_OPTIONS))
