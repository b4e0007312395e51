// A callback that reaches the model by its own type: ctx.model<ResidualMlp>()
// (residual_mlp.hpp; both plugins link libresidual_mlp_net), on every rank,
// whatever the parallel wrapper. With another model it stops the run with an
// error naming both types.
#include <skein/callback.hpp>
#include <skein/plugin.hpp>

#include "residual_mlp.hpp"

namespace {

class RecordBlockNorm final : public skein::Callback {
 public:
  explicit RecordBlockNorm(const skein::PluginArgs&) {}

  // Every rank holds the same weights, so every rank records the same value.
  void on_epoch_end(skein::TrainContext& ctx) override {
    ctx.history().record("block_norm", ctx.model<ResidualMlp>().block_weight_norm());
  }
};

}  // namespace

SKEIN_PLUGIN(RecordBlockNorm, callback, "record_block_norm", "1.0.0",
             "Records the residual_mlp model's block_weight_norm() as block_norm every epoch")
