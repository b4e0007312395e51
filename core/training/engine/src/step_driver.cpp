#include "skein/training/engine/step_driver.hpp"

#include "skein/training/engine/eval_reduction.hpp"
#include "skein/training/engine/trainer.hpp"

namespace skein::core {

void StepDriver::open_epoch() {
  if (epoch_open_) return;
  if (!began_) trainer_.begin_training();
  began_ = true;
  trainer_.begin_epoch();
  epoch_open_ = true;
  train_index_ = eval_index_ = 0;
}

Batch StepDriver::step(const torch::Tensor& inputs, const torch::Tensor& targets, bool train) {
  open_epoch();
  Batch batch{inputs, targets};
  batch.index = train ? train_index_++ : eval_index_++;
  if (train) {
    trainer_.train_batch(batch);
  } else {
    EvalSums unused;  // the epoch's evaluation is what the caller's eval steps recorded
    trainer_.eval_batch(batch, true, unused);
  }
  trainer_.flush_records();  // the step's values are its result
  return batch;
}

bool StepDriver::end_epoch() {
  open_epoch();
  epoch_open_ = false;
  return trainer_.end_epoch();
}

void StepDriver::end_training() {
  if (began_) trainer_.end_training();
  began_ = false;
}

long StepDriver::unapplied_steps(long accumulate_steps) const {
  return epoch_open_ && accumulate_steps > 0 ? train_index_ % accumulate_steps : 0;
}

}  // namespace skein::core
