// Callback "timer": wall time of the train and valid phases of each epoch,
// the slowest rank's (train_dur, valid_dur), and the training throughput of
// all ranks together (samples_per_s). `dur` (the whole epoch) is built in.
#include <chrono>
#include <optional>

#include "skein/callback.hpp"
#include "skein/parallel.hpp"
#include "skein/plugin.hpp"

namespace {

using Clock = std::chrono::steady_clock;

class Timer final : public skein::Callback {
 public:
  explicit Timer(const skein::PluginArgs&) {}

  void on_epoch_begin(skein::TrainContext&) override {
    start_ = Clock::now();
    valid_start_.reset();
    samples_ = 0;
  }
  void on_batch_begin(skein::TrainContext&, const skein::Batch& b) override {
    if (!b.training && !valid_start_) valid_start_ = Clock::now();
    if (b.training) samples_ += static_cast<double>(b.inputs.size(0));
  }

  void on_epoch_end(skein::TrainContext& ctx) override {
    const auto now = Clock::now();
    const auto train_end = valid_start_.value_or(now);
    std::vector<double> slowest{std::chrono::duration<double>(train_end - start_).count(),
                                std::chrono::duration<double>(now - train_end).count()};
    std::vector<double> samples{samples_};
    ctx.parallel().all_reduce_max(slowest);
    ctx.parallel().all_reduce_sum(samples);
    ctx.history().record("train_dur", slowest[0]);
    ctx.history().record("valid_dur", slowest[1]);
    ctx.history().record("samples_per_s", slowest[0] > 0 ? samples[0] / slowest[0] : 0.0);
  }

  // A checkpoint inside an epoch (during its train phase) carries the time
  // and samples of the epoch so far; at an epoch's end, on_epoch_begin resets them.
  nlohmann::json state() const override {
    const std::chrono::duration<double> so_far = Clock::now() - start_;
    return {{"train_seconds", so_far.count()}, {"samples", samples_}};
  }
  void load_state(const nlohmann::json& s) override {
    start_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(s.at("train_seconds").get<double>()));
    samples_ = s.at("samples").get<double>();
    valid_start_.reset();
  }

 private:
  Clock::time_point start_;
  std::optional<Clock::time_point> valid_start_;
  double samples_ = 0;
};

}  // namespace

SKEIN_PLUGIN(Timer, callback, "timer", "1.1.0",
             "Train and valid phase durations (slowest rank) and samples per second")
