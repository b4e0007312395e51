// Callback "terminate_on_nan": a non-finite training loss stops the run at
// the end of that epoch, with a message naming the epoch and batch. (Without
// it, NaN losses are simply recorded in the history.)
#include <cmath>

#include "skein/callback.hpp"
#include "skein/plugin.hpp"

namespace {

class TerminateOnNan final : public skein::Callback {
 public:
  explicit TerminateOnNan(const skein::PluginArgs&) {}

  void on_batch_end(skein::TrainContext& ctx, const skein::Batch& b) override {
    if (!b.training || ctx.stop_requested()) return;
    const double loss = b.loss.item<double>();
    if (!std::isfinite(loss))
      ctx.request_stop("train_loss is " + std::string(std::isnan(loss) ? "NaN" : "infinite") +
                       " at epoch " + std::to_string(ctx.epoch()) + ", batch " + std::to_string(b.index) +
                       " (lower the learning rate?)");
  }
};

}  // namespace

SKEIN_PLUGIN(TerminateOnNan, callback, "terminate_on_nan", "1.0.0",
             "Stops the run after an epoch in which the training loss became NaN or infinite")
