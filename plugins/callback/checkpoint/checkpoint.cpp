// Callback "checkpoint": asks the trainer for checkpoints (written by rank 0,
// atomically, then a barrier): every `every` epochs as epoch_NNNN, keeping
// the last `keep_last`, and "best" whenever `monitor` improves. With its
// defaults, `--plugin checkpoint` alone makes a run resumable.
#include <cstdio>
#include <deque>
#include <optional>

#include "skein/callback.hpp"
#include "skein/monitor.hpp"
#include "skein/plugin.hpp"

namespace {

class Checkpoint final : public skein::Callback {
 public:
  explicit Checkpoint(const skein::PluginArgs& args)
      : every_(args.options.get_int("every")), keep_last_(args.options.get_int("keep_last")) {
    if (every_ < 0) args.options.fail("every", "must be >= 0 (0: no periodic checkpoints)");
    if (keep_last_ < 1) args.options.fail("keep_last", "must be at least 1");
    if (!args.options.has("monitor")) {
      auto_options_ = args.options;  // picks valid_loss at the first epoch's end, if the run has it
    } else if (!args.options.get_string("monitor").empty()) {
      monitor_.emplace(args.options);
    }
  }

  void on_epoch_end(skein::TrainContext& ctx) override {
    if (every_ > 0 && ctx.epoch() % every_ == 0) {
      char name[32];
      std::snprintf(name, sizeof name, "epoch_%04ld", ctx.epoch());
      kept_.push_back(name);
      std::vector<std::string> drop;
      while (static_cast<long>(kept_.size()) > keep_last_) {
        drop.push_back(kept_.front());
        kept_.pop_front();
      }
      ctx.request_checkpoint(name, drop);
    }
    const auto& epoch = ctx.history().last();
    if (auto_options_) choose_monitor(epoch, ctx);
    if (monitor_ && monitor_->update(monitor_->value_in(epoch, "checkpoint")))
      ctx.request_checkpoint("best");
  }

  nlohmann::json state() const override {
    nlohmann::json s = {{"kept", kept_}};
    if (monitor_) s["monitor"] = monitor_->state();
    return s;
  }
  void load_state(const nlohmann::json& s) override {
    kept_.clear();
    for (const auto& k : s.at("kept")) kept_.push_back(k.get<std::string>());
    if (auto_options_ && s.contains("monitor")) use_default_monitor();
    if (monitor_ && s.contains("monitor")) monitor_->load_state(s["monitor"]);
  }

 private:
  static constexpr const char* kDefaultMonitor = "valid_loss";

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

  void use_default_monitor() {
    auto values = auto_options_->json();
    values["monitor"] = kDefaultMonitor;
    monitor_.emplace(skein::Options(auto_options_->owner(), values));
    auto_options_.reset();
  }

  long every_;
  long keep_last_;
  std::optional<skein::Monitor> monitor_;
  std::optional<skein::Options> auto_options_;
  std::deque<std::string> kept_;
};

}  // namespace

SKEIN_PLUGIN(Checkpoint, callback, "checkpoint", "1.1.0",
             "Atomic checkpoints (last K epochs and the best) for skein train --resume",
             SKEIN_OPTION("every", integer, "1", "Write epoch_NNNN every this many epochs (0: never)"),
             SKEIN_OPTION("keep_last", integer, "1", "How many epoch_NNNN checkpoints to keep"),
             SKEIN_OPTION("monitor", string, "null",
                          "Write 'best' when this history value improves (null: valid_loss if the run "
                          "validates; \"\": never)"),
             SKEIN_OPTION("threshold", number, "0", "Smallest change that counts as improvement"),
             SKEIN_OPTION("threshold_mode", string, "\"rel\"", "rel or abs"),
             SKEIN_OPTION("lower_is_better", boolean, "null", "Direction (null: from the name)"))
