#pragma once
// What a training or evaluation step works with (the engine's parts, by reference).
#include <torch/optim/optimizer.h>

#include "skein/context.hpp"
#include "skein/history.hpp"
#include "skein/loss.hpp"
#include "skein/model.hpp"
#include "skein/optimizer.hpp"
#include "skein/parallel.hpp"
#include "skein/training/engine/batch_records.hpp"
#include "skein/training/engine/callback_list.hpp"
#include "skein/training/engine/forward_pass.hpp"
#include "skein/training/engine/optimizer_mirror.hpp"
#include "skein/training/engine/step_pieces.hpp"

namespace skein::core {

struct StepParts {
  ForwardPass& forward;
  Model& model;
  torch::optim::Optimizer& optimizer;
  Parallel& parallel;
  const Loss& loss;
  History& history;      // batch records open a row of its batch log
  BatchRecords& records;
  const CallbackList& callbacks;
  TrainContext& context;  // what the callbacks' hooks get
  const StepPieces* pieces = nullptr;  // what `optimizer` steps, when it holds pieces of parameters
  const OptimizerFactory* optimizer_factory = nullptr;  // what made `optimizer` (with pieces)
  ShardMirror* mirror = nullptr;  // another rank's shard this rank steps too (when active)
};

}  // namespace skein::core
