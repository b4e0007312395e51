#pragma once
#include <ostream>
#include <string>
#include <typeinfo>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "skein/errors.hpp"
#include "skein/export.hpp"
#include "skein/history.hpp"
#include "skein/model.hpp"
#include "skein/run_info.hpp"

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
