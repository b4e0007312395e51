// Callback "tensorboard": every numeric epoch value as a scalar (step = epoch),
// optionally every batch value (tag "batch/<key>", step = batches so far), in
// one event file written by the main rank. On a resume the files of earlier
// attempts first lose the steps the checkpoint does not cover.
#include <memory>

#include "event_trim.hpp"
#include "event_writer.hpp"
#include "skein/callback.hpp"
#include "skein/history.hpp"
#include "skein/plugin.hpp"
#include "skein/run.hpp"

// Declared once: the schema and TensorBoardOptions.
#define TENSORBOARD_OPTIONS(X)                                                   \
  X(dir, string, "\"tensorboard\"", "Directory, relative to the run directory")  \
  X(batches, boolean, "false", "Also write per-batch scalars (tag batch/<key>)")

namespace {

SKEIN_OPTIONS_STRUCT(TensorBoardOptions, TENSORBOARD_OPTIONS)

bool is_bookkeeping(const std::string& key) {
  return key == skein::history_key::kEpoch || key == skein::history_key::kRank || skein::history_key::is_batch_size(key);
}

class TensorBoard final : public skein::Callback, public skein::EpochReporter {
 public:
  explicit TensorBoard(const skein::PluginArgs& args)
      : dir_(skein::run_output_dir(args.options, TensorBoardOptions::names::dir, args.run)), o_(args.options) {}

  void on_train_begin(skein::TrainContext& ctx) override {
    if (!ctx.run().is_main()) return;
    // A resume trains again every epoch after the checkpoint's (batch_step_
    // came back with it): what the files hold of those goes first.
    if (!ctx.history().empty())
      skein_tb::keep_events_up_to(dir_, ctx.history().last().at(skein::history_key::kEpoch).get<std::int64_t>(),
                                  batch_step_);
    // Recorded before it exists: --overwrite removes it, and not a file a user put beside it.
    const std::string file = skein::run_output_path(ctx.run(), dir_ + "/" + skein_tb::event_file_name(),
                                                    "tensorboard: event file");
    writer_ = std::make_unique<skein_tb::EventWriter>(file);
  }

  // After every on_epoch_end: keys other callbacks add (lr, train_dur) are in.
  void on_epoch_recorded(skein::TrainContext& ctx) override {
    if (!writer_) return;
    const auto& epoch = ctx.history().last();
    const auto step = epoch.at(skein::history_key::kEpoch).get<std::int64_t>();
    if (o_.batches) {
      for (const auto& b : epoch.at(skein::history_key::kBatches)) {
        for (auto it = b.begin(); it != b.end(); ++it)
          if (it.value().is_number() && !is_bookkeeping(it.key()))
            writer_->scalar("batch/" + it.key(), batch_step_, it.value().get<float>());
        ++batch_step_;
      }
    }
    for (auto it = epoch.begin(); it != epoch.end(); ++it)
      if (it.value().is_number() && !is_bookkeeping(it.key()))
        writer_->scalar(it.key(), step, it.value().get<float>());
    writer_->flush();
  }

  void on_train_end(skein::TrainContext&) override { writer_.reset(); }
  void on_exception(skein::TrainContext&, const std::string&) override { writer_.reset(); }

  nlohmann::json state() const override { return {{"batch_step", batch_step_}}; }
  void load_state(const nlohmann::json& s) override { batch_step_ = s.at("batch_step").get<std::int64_t>(); }

 private:
  std::string dir_;
  TensorBoardOptions o_;
  std::int64_t batch_step_ = 0;
  std::unique_ptr<skein_tb::EventWriter> writer_;
};

}  // namespace

SKEIN_PLUGIN(TensorBoard, callback, "tensorboard", "1.2.0",
             "TensorBoard event file of every epoch (and optionally batch) value, main rank only",
             SKEIN_OPTION_SPECS(TENSORBOARD_OPTIONS))
