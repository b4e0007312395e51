#pragma once
#include <string>

#include "skein/detail/json.hpp"

#include "skein/context.hpp"
#include "skein/detail/export.hpp"

namespace skein {

// Lifecycle hooks, called in this order (skorch's semantics):
//   on_train_begin
//     on_epoch_begin
//       on_batch_begin, [on_grad_computed,] on_batch_end   (train batches, then valid)
//     [on_epoch_scored]     (EpochScorer below: epoch-level scores of all ranks)
//     on_epoch_end          (history of the epoch is complete and synced)
//     [on_epoch_recorded]   (EpochReporter below: after every on_epoch_end)
//   on_train_end
//   [on_test_end]           (TestReporter below: the test split's results)
// and, instead of the rest, on_exception when training fails.
// Every rank runs every hook; act only where ctx.run().is_main() for output.
// Any hook may call ctx.request_stop(); training stops after the current epoch.
class SKEIN_EXPORT Callback {
 public:
  virtual ~Callback();
  virtual void on_train_begin(TrainContext&) {}
  virtual void on_epoch_begin(TrainContext&) {}
  virtual void on_batch_begin(TrainContext&, const Batch&) {}
  // After backward and gradient sync, before the optimizer step (train only).
  virtual void on_grad_computed(TrainContext&, const Batch&) {}
  virtual void on_batch_end(TrainContext&, const Batch&) {}
  virtual void on_epoch_end(TrainContext&) {}
  virtual void on_train_end(TrainContext&) {}
  // Training failed: an exception left a hook, the model, the data or a
  // collective (a peer rank's failure). Called once on every callback, on
  // every rank that is still alive, before the error propagates; `error` is
  // its first line. Close files and end output here. Anything it throws is
  // reported as a warning and otherwise ignored: the original error is the
  // one the user sees. Not called when the process is killed.
  virtual void on_exception(TrainContext&, const std::string& /*error*/) {}

  // Callback state for checkpoints (e.g. early-stopping counters).
  virtual nlohmann::json state() const { return nullptr; }
  virtual void load_state(const nlohmann::json&) {}
};

// API 2.3: an optional second base for callbacks that report an epoch (a
// table, a file). on_epoch_recorded runs on every rank after every
// callback's on_epoch_end, so the epoch's history record holds what all of
// them added (an lr_scheduler's "lr", a timer's "train_dur") whatever their
// order in the config. A host older than 2.3 refuses a plugin built with it.
//
//   class MyTable final : public skein::Callback, public skein::EpochReporter {
//     void on_epoch_recorded(skein::TrainContext& ctx) override { ... }
//   };
class SKEIN_EXPORT EpochReporter {
 public:
  virtual ~EpochReporter();
  virtual void on_epoch_recorded(TrainContext&) = 0;
};

// API 2.4: an optional second base for callbacks that compute epoch-level
// values from the whole epoch of every rank (an F1 score from counts, a
// ROC-AUC from all scores), which are no mean of per-batch values.
// on_epoch_scored runs on every rank after the epoch's batch values are
// merged and averaged, before any on_epoch_end, so that early stopping,
// checkpoints and schedules can watch what it records whatever the order in
// the config. It may call ctx.parallel()'s collectives (every rank calls it).
class SKEIN_EXPORT EpochScorer {
 public:
  virtual ~EpochScorer();
  virtual void on_epoch_scored(TrainContext&) = 0;
};

// API 2.4: an optional base for callbacks that report the test split. Runs
// on every rank after the test split is evaluated (after on_train_end), with
// what results.json holds: test_loss, test_samples, test_accuracy and the
// loss's values; for classification losses test_confusion_matrix, counts of
// samples by [true class][predicted class], summed over all ranks.
class SKEIN_EXPORT TestReporter {
 public:
  virtual ~TestReporter();
  virtual void on_test_end(TrainContext&, const nlohmann::json& results) = 0;
};

}  // namespace skein
