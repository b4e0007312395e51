#pragma once
// One training micro-batch: forward, loss, backward, the gradient sync and
// the optimizer step when its accumulation group completes, the batch's
// records and the callbacks' batch hooks around it.
#include "skein/detail/export.hpp"
#include "skein/training/device/loss_scaler.hpp"
#include "skein/training/engine/step_parts.hpp"

namespace skein::core {

class SKEIN_EXPORT TrainStep {
 public:
  // `scaler`: precision 16-mixed's loss scaling (null or disabled: none).
  TrainStep(StepParts parts, long accumulate_steps, LossScaler* scaler = nullptr)
      : p_(parts), accumulate_(accumulate_steps), scaler_(scaler) {}
  // `batch.index` is its position in the epoch; `batches_per_epoch` (0:
  // unknown) shortens the epoch's last accumulation group. Sets
  // batch.optimizer_step, outputs and loss.
  void run(Batch& batch, long batches_per_epoch);
  // Optimizer steps this process has taken (counted once its own optimizer
  // stepped, before a sharded wrapper sends the stepped parameters).
  long steps() const { return steps_; }

 private:
  StepParts p_;
  long steps_ = 0;
  long accumulate_;
  LossScaler* scaler_;
};

}  // namespace skein::core
