#pragma once
#include <ostream>
#include <string>
#include <typeinfo>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "skein/errors.hpp"
#include "skein/detail/export.hpp"
#include "skein/history.hpp"
#include "skein/model.hpp"
#include "skein/run.hpp"

namespace skein {

class Parallel;

// One batch as the hooks see it. `outputs` and `loss` are set from
// on_grad_computed / on_batch_end on.
struct Batch {
  const torch::Tensor& inputs;
  const torch::Tensor& targets;
  torch::Tensor outputs;
  torch::Tensor loss;
  bool training = true;
  long index = 0;  // 0-based within the epoch and phase
  // Train batches: whether the optimizer steps after this one (false on the
  // non-final micro-batches of gradient accumulation, whose gradients are partial).
  bool optimizer_step = true;
};

// What callbacks see of the trainer.
class SKEIN_EXPORT TrainContext {
 public:
  virtual ~TrainContext();

  virtual const RunInfo& run() const = 0;
  virtual History& history() = 0;
  virtual Model& model_base() = 0;
  virtual torch::optim::Optimizer& optimizer() = 0;
  virtual Parallel& parallel() = 0;
  // Current epoch, counting from 1 (0 before the first).
  virtual long epoch() const = 0;

  // Ask the trainer to stop after this epoch. All ranks agree on the stop.
  virtual void request_stop(const std::string& reason) = 0;
  virtual bool stop_requested() const = 0;

  // The run's log: stdout and <run_dir>/train.log on rank 0, discarded elsewhere.
  virtual std::ostream& log() = 0;

  // Train batches this rank runs per epoch.
  virtual long batches_per_epoch() const = 0;
  // The resolved run config (what <run_dir>/config.json holds).
  virtual const nlohmann::json& config() const = 0;

  // Asks for a checkpoint named `name` (a directory under checkpoint_root())
  // once every on_epoch_end hook of this epoch has run, so that it holds the
  // final state of the epoch: model, optimizer, history, trainer state with
  // every rank's RNG state, and every callback's state(). It is written
  // atomically (a crash leaves the previous one intact) by rank 0, then all
  // ranks meet at a barrier; afterwards rank 0 removes the checkpoints named
  // in `remove_after`. Every rank must ask for the same checkpoints.
  // Asked for inside an epoch (from a train batch's hook), it is written
  // right after the next batch that completes an optimizer step, and
  // `skein train --resume` continues that epoch at the batch after it; then
  // every rank must ask at the same batch (decide from step counts), and a
  // callback with state of the epoch so far keeps it in state(): the
  // trainer saves and restores each rank's own states of an open epoch.
  virtual void request_checkpoint(const std::string& name,
                                  const std::vector<std::string>& remove_after = {}) = 0;
  // <run_dir>/checkpoints
  virtual std::string checkpoint_root() const = 0;

  // API 3.7 (appended: plugins call TrainContext, only the host implements
  // it): the run's settings (max_epochs, batch_size, accumulate_steps),
  // validated, with the config's defaults.
  virtual const RunSettings& settings() const = 0;

  // The user's own model, by its own type, whatever parallel wrapper is active.
  template <class T>
  T& model() {
    Model& base = model_base();
    if (auto* typed = dynamic_cast<T*>(&base)) return *typed;
    throw ConfigError(std::string("ctx.model<") + typeid(T).name() +
                      ">(): the active model is a " + typeid(base).name());
  }
};

}  // namespace skein
