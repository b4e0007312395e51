// Callback "lr_scheduler": sets the learning rate of every parameter group.
// Per epoch (interval "epoch", at each epoch end for the next epoch): step
// (times gamma every step_size epochs), cosine or linear (from the base rate
// to eta_min over t_max epochs), plateau (times factor when `monitor` has not
// improved for `patience` epochs; decided from the synced history, so alike
// on all ranks). Per optimizer step (interval "step", after each step for the
// next): step, cosine and linear with an optional linear warm-up, and
// one_cycle; the curves are PyTorch's (step_schedule.hpp).
// Records as history key "lr" the rate of the epoch's last optimizer step.
#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "skein/callback.hpp"
#include "skein/history.hpp"
#include "skein/kit/monitor.hpp"
#include "skein/plugin.hpp"
#include "step_schedule.hpp"

// Declared once: the schema and LrScheduleOptions, LrPlateauOneCycleOptions
// (the monitor's options, SKEIN_MONITOR_OPTIONS, come between the two).
#define LR_SCHEDULE_OPTIONS(X)                                                                \
  X(policy, choice, "\"step\"", "The schedule",                                               \
    SKEIN_CHOICES("step|cosine|linear|plateau|one_cycle"))                                    \
  X(interval, choice, "\"auto\"",                                                             \
    "epoch or step: when the rate changes (auto: step for one_cycle, else epoch)",            \
    SKEIN_CHOICES("auto|epoch|step"))                                                         \
  X(step_size, integer, "10", "step: epochs (or steps) between decays", SKEIN_RANGE("[1, )")) \
  X(gamma, number, "0.1", "step: decay factor", SKEIN_RANGE("(0, )"))                         \
  X(t_max, integer, "0",                                                                      \
    "cosine, linear: epochs (or steps after warm-up) to reach eta_min (0: to the end)",       \
    SKEIN_RANGE("[0, )"))                                                                     \
  X(eta_min, number, "0", "cosine, linear: final rate, at most the optimizer's lr", SKEIN_RANGE("[0, )")) \
  X(warmup_steps, integer, "0",                                                               \
    "cosine, linear with interval step: optimizer steps of linear warm-up first",             \
    SKEIN_RANGE("[0, )"))                                                                     \
  X(warmup_start_factor, number, "0", "warm-up starts at this times the base rate",           \
    SKEIN_RANGE("[0, 1]"))
#define LR_PLATEAU_ONECYCLE_OPTIONS(X)                                                        \
  X(factor, number, "0.1", "plateau: multiply the rate by this", SKEIN_RANGE("(0, 1)"))       \
  X(patience, integer, "10", "plateau: epochs without improvement first", SKEIN_RANGE("[0, )")) \
  X(min_lr, number, "0", "plateau: lower bound of the rate", SKEIN_RANGE("[0, )"))            \
  X(max_lr, number, "0", "one_cycle: peak rate (0: the optimizer's lr)", SKEIN_RANGE("[0, )")) \
  X(total_steps, integer, "0", "one_cycle: length of the cycle (0: every step of the run)",   \
    SKEIN_RANGE("[0, )"))                                                                     \
  X(pct_start, number, "0.3", "one_cycle: share of the cycle spent rising", SKEIN_RANGE("(0, 1)")) \
  X(anneal, choice, "\"cos\"", "one_cycle: the curve", SKEIN_CHOICES("cos|linear"))           \
  X(div_factor, number, "25", "one_cycle: initial rate = max_lr / div_factor", SKEIN_RANGE("(0, )")) \
  X(final_div_factor, number, "10000", "one_cycle: final rate = initial / final_div_factor",  \
    SKEIN_RANGE("(0, )"))

namespace {

SKEIN_OPTIONS_STRUCT(LrScheduleOptions, LR_SCHEDULE_OPTIONS)
SKEIN_OPTIONS_STRUCT(LrPlateauOneCycleOptions, LR_PLATEAU_ONECYCLE_OPTIONS)

enum class Policy { step, cosine, linear, plateau, one_cycle };

constexpr const char* kMonitorState = "monitor";  // the monitor's entry in state()

// `name`: the value of option policy, one of its choices.
Policy policy_of(const std::string& name) {
  if (name == "step") return Policy::step;
  if (name == "cosine") return Policy::cosine;
  if (name == "linear") return Policy::linear;
  if (name == "plateau") return Policy::plateau;
  return Policy::one_cycle;
}

// `interval`: the value of option interval. "auto": one_cycle steps per
// optimizer step, the others per epoch.
bool per_step_of(const skein::Options& o, const std::string& interval, Policy policy) {
  const char* option = LrScheduleOptions::names::interval;
  const bool per_step = interval == "step" || (interval == "auto" && policy == Policy::one_cycle);
  if (per_step && policy == Policy::plateau) o.fail(option, "step does not go with policy plateau (it reads epoch values)");
  if (!per_step && policy == Policy::one_cycle) o.fail(option, "epoch does not go with policy one_cycle (it is per step)");
  return per_step;
}

class LrScheduler final : public skein::Callback {
 public:
  explicit LrScheduler(const skein::PluginArgs& args)
      : schedule_(args.options),
        plateau_cycle_(args.options),
        policy_(policy_of(schedule_.policy)),
        per_step_(per_step_of(args.options, schedule_.interval, policy_)),
        step_size_(schedule_.step_size),
        gamma_(schedule_.gamma),
        t_max_(schedule_.t_max),
        eta_min_(schedule_.eta_min),
        warmup_steps_(schedule_.warmup_steps),
        warmup_start_factor_(schedule_.warmup_start_factor),
        factor_(plateau_cycle_.factor),
        patience_(plateau_cycle_.patience),
        min_lr_(plateau_cycle_.min_lr) {
    const auto& o = args.options;
    if (warmup_steps_ > 0 && !(per_step_ && (policy_ == Policy::cosine || policy_ == Policy::linear)))
      o.fail(LrScheduleOptions::names::warmup_steps,
             "counts optimizer steps: it needs interval step and policy cosine or linear");
    if (policy_ == Policy::plateau) monitor_.emplace(o);
    if (policy_ == Policy::one_cycle) {
      cycle_.max_lr = plateau_cycle_.max_lr;
      cycle_.total_steps = plateau_cycle_.total_steps;
      cycle_.pct_start = plateau_cycle_.pct_start;
      cycle_.div_factor = plateau_cycle_.div_factor;
      cycle_.final_div_factor = plateau_cycle_.final_div_factor;
      cycle_.cosine = plateau_cycle_.anneal == "cos";
    }
  }

  void on_train_begin(skein::TrainContext& ctx) override {
    refuse_a_second_schedule(ctx.config());
    if (!base_lr_) base_lr_ = current_lr(ctx);
    // A "final" rate above the start: the schedule would raise the rate, surely not what was meant.
    if ((policy_ == Policy::cosine || policy_ == Policy::linear) && eta_min_ > *base_lr_)
      throw skein::OptionError(LrScheduleOptions::names::eta_min,
                               "lr_scheduler: option 'eta_min' " + number(eta_min_) + " is above the optimizer's lr " +
                                   number(*base_lr_) + ": the rate would rise; give eta_min below lr");
    const long max_epochs = static_cast<long>(ctx.settings().max_epochs);
    if (!per_step_) {
      if (t_max_ == 0) t_max_ = max_epochs;
      return;
    }
    const long total = total_steps(ctx, max_epochs);
    if (t_max_ == 0) t_max_ = std::max(1L, total - warmup_steps_);
    if (policy_ == Policy::one_cycle) {
      if (cycle_.total_steps == 0) cycle_.total_steps = total;
      if (cycle_.max_lr == 0) cycle_.max_lr = *base_lr_;
      if (cycle_.pct_start * static_cast<double>(cycle_.total_steps) <= 1)
        throw skein::ConfigError("lr_scheduler: one_cycle needs pct_start * total_steps > 1 (got " +
                                 std::to_string(cycle_.pct_start) + " * " + std::to_string(cycle_.total_steps) + ")");
    }
    set_lr(ctx, rate_at(steps_));  // the first step's rate (on resume: the next step's)
  }

  void on_batch_end(skein::TrainContext& ctx, const skein::Batch& b) override {
    if (!per_step_ || !b.training || !b.optimizer_step) return;
    last_used_ = current_lr(ctx);
    set_lr(ctx, rate_at(++steps_));
  }

  void on_epoch_end(skein::TrainContext& ctx) override {
    if (per_step_) {
      ctx.history().record(skein::history_key::kLearningRate, last_used_ ? *last_used_ : current_lr(ctx));
      last_used_.reset();
      return;
    }
    double lr = current_lr(ctx);
    ctx.history().record(skein::history_key::kLearningRate, lr);
    if (policy_ == Policy::plateau) {
      const double value = monitor_->value_in(ctx.history().last());
      if (monitor_->update(value)) {
        bad_epochs_ = 0;
      } else if (++bad_epochs_ > patience_) {
        lr = std::max(lr * factor_, min_lr_);
        bad_epochs_ = 0;
      }
    } else {
      lr = rate_at(ctx.epoch());
    }
    set_lr(ctx, lr);
  }

  nlohmann::json state() const override {
    nlohmann::json s = {{"bad_epochs", bad_epochs_}, {"steps", steps_}};
    if (base_lr_) s["base_lr"] = *base_lr_;
    if (last_used_) s["last_used"] = *last_used_;  // inside an epoch (a step checkpoint)
    if (monitor_) s[kMonitorState] = monitor_->state();
    return s;
  }
  void load_state(const nlohmann::json& s) override {
    bad_epochs_ = s.at("bad_epochs").get<long>();
    steps_ = s.value("steps", 0L);  // absent in checkpoints of 1.0.0 (per-epoch only)
    if (s.contains("base_lr")) base_lr_ = s["base_lr"].get<double>();
    last_used_.reset();
    if (s.contains("last_used")) last_used_ = s["last_used"].get<double>();
    if (monitor_ && s.contains(kMonitorState)) monitor_->load_state(s[kMonitorState]);
  }

 private:
  // 0.001, 1e-05: as a user writes a rate.
  static std::string number(double x) {
    std::ostringstream s;
    s << x;
    return s.str();
  }
  // Two schedules would each set the rate over the other's, the last one's
  // winning silently: one line naming both entries of the run's callbacks.
  static void refuse_a_second_schedule(const nlohmann::json& config) {
    const auto callbacks = config.find(skein::run_key::kCallbacks);
    if (callbacks == config.end() || !callbacks->is_array()) return;
    std::vector<std::size_t> schedules;
    for (std::size_t i = 0; i < callbacks->size(); ++i) {
      const nlohmann::json& entry = (*callbacks)[i];
      if (entry.is_object() && entry.value("plugin", "") == "lr_scheduler") schedules.push_back(i);
    }
    if (schedules.size() < 2) return;
    throw skein::ConfigError("callbacks[" + std::to_string(schedules[0]) + "] and callbacks[" +
                             std::to_string(schedules[1]) +
                             "] are both lr_scheduler: each would set the learning rate over the other's; keep "
                             "one (a warm-up then a decay is one: interval step with warmup_steps)");
  }
  static double current_lr(skein::TrainContext& ctx) {
    return ctx.optimizer().param_groups().at(0).options().get_lr();
  }
  static void set_lr(skein::TrainContext& ctx, double lr) {
    for (auto& group : ctx.optimizer().param_groups()) group.options().set_lr(lr);
  }

  // Optimizer steps of the whole run: max_epochs times this rank's steps per epoch.
  long total_steps(skein::TrainContext& ctx, long max_epochs) const {
    const long batches = ctx.batches_per_epoch();
    const long accumulate = static_cast<long>(ctx.settings().accumulate_steps);
    const bool needs_total = (t_max_ == 0 && (policy_ == Policy::cosine || policy_ == Policy::linear)) ||
                             (policy_ == Policy::one_cycle && cycle_.total_steps == 0);
    if (batches <= 0 && needs_total)
      throw skein::ConfigError("lr_scheduler: the number of batches per epoch is not known before training; "
                               "set t_max (cosine, linear) or total_steps (one_cycle)");
    return max_epochs * ((batches + accumulate - 1) / accumulate);
  }

  // The rate after `n` epochs or optimizer steps (the interval's unit).
  double rate_at(long n) const {
    switch (policy_) {
      case Policy::step:
        return *base_lr_ * std::pow(gamma_, static_cast<double>(n / step_size_));
      case Policy::one_cycle:
        return cycle_.at(n);
      default: {
        skein_lr::WarmupDecay curve;
        curve.base = *base_lr_;
        curve.eta_min = eta_min_;
        curve.warmup_steps = warmup_steps_;
        curve.start_factor = warmup_start_factor_;
        curve.decay_steps = t_max_;
        curve.cosine = policy_ == Policy::cosine;
        return curve.at(n);
      }
    }
  }

  LrScheduleOptions schedule_;
  LrPlateauOneCycleOptions plateau_cycle_;
  Policy policy_;
  bool per_step_;
  long step_size_;
  double gamma_;
  long t_max_;
  double eta_min_;
  long warmup_steps_;
  double warmup_start_factor_;
  double factor_;
  long patience_;
  double min_lr_;
  skein_lr::OneCycle cycle_;
  std::optional<skein::Monitor> monitor_;
  std::optional<double> base_lr_;
  std::optional<double> last_used_;  // the rate of this epoch's last step (per step)
  long bad_epochs_ = 0;
  long steps_ = 0;  // optimizer steps taken (per step)
};

}  // namespace

SKEIN_PLUGIN(LrScheduler, callback, "lr_scheduler", "1.1.3",
             "Learning-rate schedule per epoch or per optimizer step: step, cosine, linear (with warm-up), "
             "plateau, one_cycle (history key lr)",
             SKEIN_OPTION_SPECS(LR_SCHEDULE_OPTIONS),
             SKEIN_MONITOR_OPTIONS("\"valid_loss\"", "history key to watch", "0.0001", "plateau: "),
             SKEIN_OPTION_SPECS(LR_PLATEAU_ONECYCLE_OPTIONS))
