// Callback "early_stopping": stops when the monitored history value has not
// improved for `patience` epochs. Decided from the (synced) history; the
// trainer agrees on the stop through a collective, so every rank stops at
// the same epoch. NaN never counts as an improvement.
#include <torch/types.h>
#include <torch/utils.h>

#include "skein/callback.hpp"
#include "skein/kit/monitor.hpp"
#include "skein/plugin.hpp"

// Besides the monitor's: declared once, for the schema and EarlyStoppingOptions.
#define EARLY_STOPPING_OPTIONS(X)                                                   \
  X(patience, integer, "5", "Epochs without improvement before stopping", SKEIN_RANGE("[1, )")) \
  X(load_best, boolean, "false", "At the end, restore the parameters of the best epoch")

namespace {

SKEIN_OPTIONS_STRUCT(EarlyStoppingOptions, EARLY_STOPPING_OPTIONS)

class EarlyStopping final : public skein::Callback {
 public:
  explicit EarlyStopping(const skein::PluginArgs& args)
      : monitor_(args.options), o_(args.options) {}

  void on_epoch_end(skein::TrainContext& ctx) override {
    const double value = monitor_.value_in(ctx.history().last());
    if (monitor_.update(value)) {
      wait_ = 0;
      best_epoch_ = ctx.epoch();
      if (o_.load_best) snapshot(ctx.model_base());
    } else if (++wait_ >= o_.patience) {
      ctx.request_stop(monitor_.key() + " did not improve for " + std::to_string(o_.patience) +
                       " epochs (best " + std::to_string(monitor_.best()) + " at epoch " +
                       std::to_string(best_epoch_) + ")");
    }
  }

  void on_train_end(skein::TrainContext& ctx) override {
    if (!o_.load_best || best_.empty()) return;
    torch::NoGradGuard no_grad;
    auto state = state_tensors(ctx.model_base());
    for (std::size_t i = 0; i < state.size(); ++i) state[i].copy_(best_[i]);
    ctx.log() << "Restored the parameters of epoch " << best_epoch_ << " (best " << monitor_.key()
              << ")\n";
  }

  nlohmann::json state() const override {
    return {{kMonitorState, monitor_.state()}, {"wait", wait_}, {"best_epoch", best_epoch_}};
  }
  void load_state(const nlohmann::json& s) override {
    monitor_.load_state(s.at(kMonitorState));
    wait_ = s.at("wait").get<long>();
    best_epoch_ = s.at("best_epoch").get<long>();
  }

 private:
  static std::vector<torch::Tensor> state_tensors(torch::nn::Module& m) {
    auto out = m.parameters();
    for (const auto& b : m.buffers()) out.push_back(b);
    return out;
  }
  void snapshot(torch::nn::Module& m) {
    best_.clear();
    for (const auto& t : state_tensors(m)) best_.push_back(t.detach().clone());
  }

  static constexpr const char* kMonitorState = "monitor";  // the monitor's entry in state()
  skein::Monitor monitor_;
  EarlyStoppingOptions o_;
  long wait_ = 0;
  long best_epoch_ = 0;
  std::vector<torch::Tensor> best_;
};

}  // namespace

SKEIN_PLUGIN(EarlyStopping, callback, "early_stopping", "1.0.0",
             "Stops when a history value stops improving (same epoch on every rank)",
             SKEIN_MONITOR_OPTIONS("\"valid_loss\"", "History key to watch", "0.0001", ""),
             SKEIN_OPTION_SPECS(EARLY_STOPPING_OPTIONS))
