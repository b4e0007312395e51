// Callback "checkpoint": asks the trainer for checkpoints (written by rank 0,
// atomically, then a barrier): every `every` epochs as epoch_NNNN, every
// `every_n_steps` optimizer steps as step_NNNNNNNN (inside an epoch: resume
// continues at the next batch), keeping the last `keep_last` of each, and
// "best" whenever `monitor` improves. With its defaults, `--plugin
// checkpoint` alone makes a run resumable.
#include <cstdio>
#include <deque>
#include <optional>

#include "skein/callback.hpp"
#include "skein/history.hpp"
#include "skein/kit/monitor.hpp"
#include "skein/plugin.hpp"

// Declared once (the monitor's options: SKEIN_MONITOR_OPTIONS): the schema and CheckpointOptions.
#define CHECKPOINT_OPTIONS(X)                                                                        \
  X(every, integer, "1", "Write epoch_NNNN every this many epochs (0: never)", SKEIN_RANGE("[0, )")) \
  X(every_n_steps, integer, "0",                                                                     \
    "Write step_NNNNNNNN every this many optimizer steps, inside epochs too; --resume "               \
    "continues at the next batch (0: never)",                                                        \
    SKEIN_RANGE("[0, )"))                                                                            \
  X(keep_last, integer, "1", "How many epoch_NNNN, and how many step_NNNNNNNN, to keep",             \
    SKEIN_RANGE("[1, )"))

namespace {

SKEIN_OPTIONS_STRUCT(CheckpointOptions, CHECKPOINT_OPTIONS)

class Checkpoint final : public skein::Callback {
 public:
  explicit Checkpoint(const skein::PluginArgs& args) : Checkpoint(args, CheckpointOptions(args.options)) {}

 private:
  Checkpoint(const skein::PluginArgs& args, const CheckpointOptions& o)
      : every_(o.every), every_n_steps_(o.every_n_steps), keep_last_(o.keep_last) {
    const std::optional<std::string> key = skein::Monitor::key_in(args.options);
    if (!key) {
      auto_options_ = args.options;  // picks valid_loss at the first epoch's end, if the run has it
    } else if (!key->empty()) {
      monitor_.emplace(args.options);
    }
  }

 public:
  // Every rank counts the same steps, so all ask for the same checkpoint at
  // the same batch (the trainer writes it after that batch's step).
  void on_batch_end(skein::TrainContext& ctx, const skein::Batch& b) override {
    if (!b.training || !b.optimizer_step) return;
    ++steps_;
    if (every_n_steps_ > 0 && steps_ % every_n_steps_ == 0) request(ctx, "step_%08ld", steps_, kept_steps_);
  }

  void on_epoch_end(skein::TrainContext& ctx) override {
    if (every_ > 0 && ctx.epoch() % every_ == 0) request(ctx, "epoch_%04ld", ctx.epoch(), kept_);
    const auto& epoch = ctx.history().last();
    if (auto_options_) choose_monitor(epoch, ctx);
    if (monitor_ && monitor_->update(monitor_->value_in(epoch)))
      ctx.request_checkpoint("best");
  }

  nlohmann::json state() const override {
    nlohmann::json s = {{"kept", kept_}, {"kept_steps", kept_steps_}, {"steps", steps_}};
    if (monitor_) s[kMonitorState] = monitor_->state();
    return s;
  }
  void load_state(const nlohmann::json& s) override {
    kept_.clear();
    for (const auto& k : s.at("kept")) kept_.push_back(k.get<std::string>());
    kept_steps_.clear();
    for (const auto& k : s.value("kept_steps", nlohmann::json::array())) kept_steps_.push_back(k.get<std::string>());
    steps_ = s.value("steps", 0L);
    if (auto_options_ && s.contains(kMonitorState)) use_default_monitor();
    if (monitor_ && s.contains(kMonitorState)) monitor_->load_state(s[kMonitorState]);
  }

 private:
  static constexpr const char* kDefaultMonitor = skein::history_key::kValidLoss;
  static constexpr const char* kMonitorState = "monitor";  // the monitor's entry in state()

  // `monitor` left unset: valid_loss when the run validates, else no "best".
  void choose_monitor(const nlohmann::json& epoch, skein::TrainContext& ctx) {
    if (epoch.contains(kDefaultMonitor)) {
      use_default_monitor();
      return;
    }
    ctx.log() << "checkpoint: the run has no " << kDefaultMonitor
              << ", so no 'best' checkpoint (set the option monitor to choose a key)\n";
    auto_options_.reset();
  }

  // Asks for NAME_FORMAT % number, dropping the oldest of `kept` beyond keep_last.
  void request(skein::TrainContext& ctx, const char* name_format, long number, std::deque<std::string>& kept) {
    char name[40];
    std::snprintf(name, sizeof name, name_format, number);
    kept.push_back(name);
    std::vector<std::string> drop;
    while (static_cast<long>(kept.size()) > keep_last_) {
      drop.push_back(kept.front());
      kept.pop_front();
    }
    ctx.request_checkpoint(name, drop);
  }

  void use_default_monitor() {
    monitor_.emplace(*auto_options_, kDefaultMonitor);
    auto_options_.reset();
  }

  long every_;
  long every_n_steps_;
  long keep_last_;
  long steps_ = 0;  // optimizer steps of the run so far
  std::optional<skein::Monitor> monitor_;
  std::optional<skein::Options> auto_options_;
  std::deque<std::string> kept_;        // epoch_NNNN
  std::deque<std::string> kept_steps_;  // step_NNNNNNNN
};

}  // namespace

SKEIN_PLUGIN(Checkpoint, callback, "checkpoint", "1.2.0",
             "Atomic checkpoints (last K epochs and steps, and the best) for skein train --resume",
             SKEIN_OPTION_SPECS(CHECKPOINT_OPTIONS),
             SKEIN_MONITOR_OPTIONS("null",
                                   "Write 'best' when this history value improves (null: valid_loss if the run "
                                   "validates; \"\": never)",
                                   "0", ""))
