#pragma once
// The engine's step API: a run driven batch by batch by its caller (a
// skein::Session, the SDK harness's EngineRun) instead of Trainer::fit's
// loop. It opens the training and each epoch when the first step arrives,
// numbers the epoch's batches and reads each step's records at once.
#include <torch/types.h>

#include "skein/context.hpp"
#include "skein/detail/export.hpp"

namespace skein::core {

class Trainer;

class SKEIN_EXPORT StepDriver {
 public:
  explicit StepDriver(Trainer& trainer) : trainer_(trainer) {}

  // One batch of the open epoch (opened first when none is): a training
  // step, or an evaluation recorded as valid values. Returns the batch as
  // it ran (outputs, loss); its records are in the history.
  Batch step(const torch::Tensor& inputs, const torch::Tensor& targets, bool train);
  // Ends the open epoch: one without steps (a rank without data) still takes
  // part. Whether a callback asked the run to stop (agreed over ranks);
  // how many epochs to run is the caller's.
  bool end_epoch();
  // Ends the training, when it began.
  void end_training();

  // Train steps of the open epoch after its last complete group of
  // `accumulate_steps` (their gradients never reach the optimizer).
  long unapplied_steps(long accumulate_steps) const;
  bool began() const { return began_; }
  bool epoch_open() const { return epoch_open_; }

 private:
  void open_epoch();

  Trainer& trainer_;
  bool began_ = false;       // on_train_begin ran
  bool epoch_open_ = false;  // a step since the last end_epoch
  long train_index_ = 0;     // steps of the open epoch
  long eval_index_ = 0;
};

}  // namespace skein::core
