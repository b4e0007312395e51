// Callback "lr_scheduler": sets the learning rate of every parameter group at
// each epoch end, for the next epoch. Policies: step (times gamma every
// step_size epochs), cosine (from the base rate to eta_min over t_max
// epochs), plateau (times factor when `monitor` has not improved for
// `patience` epochs; decided from the synced history, so alike on all ranks).
// Records the rate each epoch used as history key "lr".
#include <cmath>
#include <optional>

#include "skein/callback.hpp"
#include "skein/monitor.hpp"
#include "skein/plugin.hpp"

namespace {

class LrScheduler final : public skein::Callback {
 public:
  explicit LrScheduler(const skein::PluginArgs& args)
      : policy_(args.options.get_string("policy")),
        step_size_(args.options.get_int("step_size")),
        gamma_(args.options.get_number("gamma")),
        t_max_(args.options.get_int("t_max")),
        eta_min_(args.options.get_number("eta_min")),
        factor_(args.options.get_number("factor")),
        patience_(args.options.get_int("patience")),
        min_lr_(args.options.get_number("min_lr")) {
    const auto& o = args.options;
    if (policy_ != "step" && policy_ != "cosine" && policy_ != "plateau")
      o.fail("policy", "must be step, cosine or plateau, got '" + policy_ + "'");
    if (step_size_ < 1) o.fail("step_size", "must be at least 1");
    if (!(gamma_ > 0 && std::isfinite(gamma_))) o.fail("gamma", "must be a positive number");
    if (t_max_ < 0) o.fail("t_max", "must be >= 0 (0: max_epochs)");
    if (!(factor_ > 0 && factor_ < 1)) o.fail("factor", "must be in (0, 1)");
    if (patience_ < 0) o.fail("patience", "must be >= 0");
    if (!(min_lr_ >= 0) || !(eta_min_ >= 0)) o.fail("min_lr", "and eta_min must be >= 0");
    if (policy_ == "plateau") monitor_.emplace(o);
  }

  void on_train_begin(skein::TrainContext& ctx) override {
    if (!base_lr_) base_lr_ = current_lr(ctx);
    if (t_max_ == 0) t_max_ = ctx.config().value("max_epochs", 1L);
  }

  void on_epoch_end(skein::TrainContext& ctx) override {
    const long epoch = ctx.epoch();
    double lr = current_lr(ctx);
    ctx.history().record("lr", lr);
    if (policy_ == "step") {
      lr = *base_lr_ * std::pow(gamma_, static_cast<double>(epoch / step_size_));
    } else if (policy_ == "cosine") {
      const double progress = std::min(1.0, static_cast<double>(epoch) / static_cast<double>(t_max_));
      lr = eta_min_ + (*base_lr_ - eta_min_) * (1 + std::cos(M_PI * progress)) / 2;
    } else {
      const double value = monitor_->value_in(ctx.history().last(), "lr_scheduler");
      if (monitor_->update(value)) {
        bad_epochs_ = 0;
      } else if (++bad_epochs_ > patience_) {
        lr = std::max(lr * factor_, min_lr_);
        bad_epochs_ = 0;
      }
    }
    for (auto& group : ctx.optimizer().param_groups()) group.options().set_lr(lr);
  }

  nlohmann::json state() const override {
    nlohmann::json s = {{"bad_epochs", bad_epochs_}};
    if (base_lr_) s["base_lr"] = *base_lr_;
    if (monitor_) s["monitor"] = monitor_->state();
    return s;
  }
  void load_state(const nlohmann::json& s) override {
    bad_epochs_ = s.at("bad_epochs").get<long>();
    if (s.contains("base_lr")) base_lr_ = s["base_lr"].get<double>();
    if (monitor_ && s.contains("monitor")) monitor_->load_state(s["monitor"]);
  }

 private:
  static double current_lr(skein::TrainContext& ctx) {
    return ctx.optimizer().param_groups().at(0).options().get_lr();
  }

  std::string policy_;
  long step_size_;
  double gamma_;
  long t_max_;
  double eta_min_, factor_;
  long patience_;
  double min_lr_;
  std::optional<skein::Monitor> monitor_;
  std::optional<double> base_lr_;
  long bad_epochs_ = 0;
};

}  // namespace

SKEIN_PLUGIN(LrScheduler, callback, "lr_scheduler", "1.0.0",
             "Learning-rate schedule: step, cosine, or reduce on plateau (history key lr)",
             SKEIN_OPTION("policy", string, "\"step\"", "step, cosine or plateau"),
             SKEIN_OPTION("step_size", integer, "10", "step: epochs between decays"),
             SKEIN_OPTION("gamma", number, "0.1", "step: decay factor"),
             SKEIN_OPTION("t_max", integer, "0", "cosine: epochs to reach eta_min (0: max_epochs)"),
             SKEIN_OPTION("eta_min", number, "0", "cosine: final rate"),
             SKEIN_OPTION("monitor", string, "\"valid_loss\"", "plateau: history key to watch"),
             SKEIN_OPTION("factor", number, "0.1", "plateau: multiply the rate by this"),
             SKEIN_OPTION("patience", integer, "10", "plateau: epochs without improvement first"),
             SKEIN_OPTION("threshold", number, "0.0001", "plateau: smallest improvement"),
             SKEIN_OPTION("threshold_mode", string, "\"rel\"", "plateau: rel or abs"),
             SKEIN_OPTION("lower_is_better", boolean, "null", "plateau: direction (null: from the name)"),
             SKEIN_OPTION("min_lr", number, "0", "plateau: lower bound of the rate"))
