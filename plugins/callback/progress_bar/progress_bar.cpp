// Callback "progress_bar": train batches done, rate and ETA on the main rank.
// On a terminal it redraws one line in place; otherwise (a pipe, a file, a
// launcher's relay) it prints a plain line every `every` batches.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "skein/callback.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and ProgressBarOptions.
#define PROGRESS_BAR_OPTIONS(X)                                                   \
  X(mode, choice, "\"auto\"", "auto: tty if stdout is a terminal, else lines",     \
    SKEIN_CHOICES("auto|tty|lines"))                                              \
  X(every, integer, "0", "lines mode: print every N batches (0: ~10 an epoch)",   \
    SKEIN_RANGE("[0, )"))                                                         \
  X(width, integer, "30", "tty mode: bar width in characters", SKEIN_RANGE("[10, 200]"))

namespace {

SKEIN_OPTIONS_STRUCT(ProgressBarOptions, PROGRESS_BAR_OPTIONS)

using Clock = std::chrono::steady_clock;

class ProgressBar final : public skein::Callback {
 public:
  explicit ProgressBar(const skein::PluginArgs& args)
      : o_(args.options) {
    const std::string& mode = o_.mode;
    tty_ = mode == "tty" || (mode == "auto" && isatty(STDOUT_FILENO));
  }

  void on_epoch_begin(skein::TrainContext& ctx) override {
    start_ = Clock::now();
    total_ = ctx.batches_per_epoch();
  }

  void on_batch_end(skein::TrainContext& ctx, const skein::Batch& b) override {
    if (!b.training || !ctx.run().is_main()) return;
    const long done = b.index + 1;
    const long every = o_.every > 0 ? o_.every : std::max<long>(1, total_ / 10);
    if (!tty_ && done % every != 0 && done != total_) return;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double rate = elapsed > 0 ? done / elapsed : 0;
    const double eta = rate > 0 ? (total_ - done) / rate : 0;
    char stats[96];
    std::snprintf(stats, sizeof stats, "%ld/%ld batches  %.1f batch/s  ETA %.1fs", done, total_, rate, eta);
    if (tty_) {
      const long filled = total_ > 0 ? o_.width * done / total_ : 0;
      std::cout << "\rEpoch " << ctx.epoch() << " [" << std::string(static_cast<std::size_t>(filled), '#')
                << std::string(static_cast<std::size_t>(o_.width - filled), '.') << "] " << stats
                << (done == total_ ? "\n" : "") << std::flush;
      mid_line_ = done != total_;
    } else {
      std::cout << "Epoch " << ctx.epoch() << ": " << stats << std::endl;
    }
  }

  // A failure mid-epoch: end the redrawn line, so the error starts its own.
  void on_exception(skein::TrainContext&, const std::string&) override {
    if (tty_ && mid_line_) std::cout << std::endl;
    mid_line_ = false;
  }

 private:
  ProgressBarOptions o_;
  bool tty_ = false;
  bool mid_line_ = false;
  Clock::time_point start_;
  long total_ = 0;
};

}  // namespace

SKEIN_PLUGIN(ProgressBar, callback, "progress_bar", "1.0.0",
             "Batches done, rate and ETA (main rank; redraws in place only on a terminal)",
             SKEIN_OPTION_SPECS(PROGRESS_BAR_OPTIONS))
