#pragma once
#include "skein/json.hpp"

#include "skein/context.hpp"
#include "skein/export.hpp"

namespace skein {

// Lifecycle hooks, called in this order (skorch's semantics):
//   on_train_begin
//     on_epoch_begin
//       on_batch_begin, [on_grad_computed,] on_batch_end   (train batches, then valid)
//     on_epoch_end          (history of the epoch is complete and synced)
//   on_train_end
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

  // Callback state for checkpoints (e.g. early-stopping counters).
  virtual nlohmann::json state() const { return nullptr; }
  virtual void load_state(const nlohmann::json&) {}
};

}  // namespace skein
