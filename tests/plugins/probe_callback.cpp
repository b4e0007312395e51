// Test callback: records the hook order, reaches the user's model type, and can
// request a stop at a given epoch.
#include "probe_model.hpp"
#include "skein/callback.hpp"
#include "skein/plugin.hpp"

namespace {

class ProbeCallback final : public skein::Callback {
 public:
  explicit ProbeCallback(const skein::PluginArgs& args)
      : stop_at_(args.options.get_int("stop_at")), use_model_(args.options.get_bool("use_model")) {}

  void on_train_begin(skein::TrainContext&) override { events_ += "T"; }
  void on_epoch_begin(skein::TrainContext&) override { events_ += "E"; }
  void on_batch_begin(skein::TrainContext&, const skein::Batch& b) override {
    events_ += b.training ? "b" : "v";
  }
  void on_grad_computed(skein::TrainContext&, const skein::Batch& b) override {
    if (b.training && b.loss.defined()) events_ += "g";
  }
  void on_batch_end(skein::TrainContext&, const skein::Batch&) override { events_ += "."; }
  void on_epoch_end(skein::TrainContext& ctx) override {
    events_ += "e";
    if (use_model_) {
      auto& model = ctx.model<ProbeModel>();
      model.note_epoch(ctx.epoch());
      ctx.history().record("probe_tag", model.tag);
      ctx.history().record("probe_epochs_seen", static_cast<long>(model.epochs_seen.size()));
    }
    if (stop_at_ > 0 && ctx.epoch() >= stop_at_) ctx.request_stop("probe asked at epoch " + std::to_string(ctx.epoch()));
  }
  void on_train_end(skein::TrainContext& ctx) override {
    events_ += "t";
    ctx.history().record("probe_events", events_);
  }

 private:
  long stop_at_;
  bool use_model_;
  std::string events_;
};

}  // namespace

SKEIN_PLUGIN(ProbeCallback, callback, "probe_callback", "0.1.0", "Test callback",
             SKEIN_OPTION("stop_at", integer, "0", "Request a stop at this epoch (0: never)"),
             SKEIN_OPTION("use_model", boolean, "false", "Call ProbeModel's own method"))
