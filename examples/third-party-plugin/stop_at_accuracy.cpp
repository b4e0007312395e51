// A callback: stop once validation accuracy reaches a target.
#include <skein/callback.hpp>
#include <skein/plugin.hpp>

namespace {

class StopAtAccuracy final : public skein::Callback {
 public:
  explicit StopAtAccuracy(const skein::PluginArgs& args) : target_(args.options.get_number("target")) {
    if (!(target_ > 0 && target_ <= 1)) args.options.fail("target", "must be in (0, 1]");
  }

  // Runs on every rank with the same (synced) history, so every rank decides alike.
  void on_epoch_end(skein::TrainContext& ctx) override {
    auto acc = ctx.history().get(-1, "valid_acc");
    if (acc.is_number() && acc.get<double>() >= target_)
      ctx.request_stop("valid_acc reached " + std::to_string(target_));
  }

 private:
  double target_;
};

}  // namespace

SKEIN_PLUGIN(StopAtAccuracy, callback, "stop_at_accuracy", "1.0.0",
             "Stops once valid_acc reaches a target",
             SKEIN_OPTION("target", number, "0.9", "Validation accuracy to reach, in (0, 1]"))
