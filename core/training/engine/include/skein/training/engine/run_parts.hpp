#pragma once
// What a run is made of: every plugin its config names, made in the order
// that keeps a run reproducible (the model's initialisation depends on the
// seed alone), with the dataset's splits opened.
#include <deque>
#include <memory>
#include <ostream>
#include <vector>

#include <torch/optim/optimizer.h>

#include "skein/training/config/config.hpp"
#include "skein/host/plugin_registry.hpp"
#include "skein/dataset.hpp"
#include "skein/detail/export.hpp"
#include "skein/history_backend.hpp"
#include "skein/loss.hpp"
#include "skein/model.hpp"
#include "skein/optimizer.hpp"
#include "skein/options.hpp"
#include "skein/parallel.hpp"
#include "skein/run.hpp"
#include "skein/run_store.hpp"
#include "skein/training/engine/callback_list.hpp"
#include "skein/training/device/loss_scaler.hpp"
#include "skein/training/engine/optimizer_mirror.hpp"
#include "skein/training/engine/step_pieces.hpp"
#include "skein/training/data/training_data.hpp"

namespace skein::core {

struct AssemblyInput {
  const RunConfig& config;
  const PluginRegistry& registry;
  const RunInfo& run;
  std::ostream& log;                // warm start notes
  const RunStore* store = nullptr;  // the run's store (null: one process without one)
};

// Members in the order they must be destroyed last to first.
struct SKEIN_EXPORT RunParts {
  std::deque<Options> options;  // each plugin's options, for as long as the plugins live
  std::shared_ptr<Loss> loss;
  std::shared_ptr<Dataset> data;  // null: a session fed by its program
  DataInfo data_info;             // the dataset's, or the config's data_info without one
  TrainingData splits;            // empty without a dataset
  std::shared_ptr<Model> model;
  std::shared_ptr<Parallel> parallel;
  std::shared_ptr<OptimizerFactory> optimizer_factory;  // its library holds the optimizer's code
  // Who steps what of model->parameters() when the parallel wrapper shards
  // the optimizer (optimizer_shards.hpp), else empty.
  std::vector<ParameterSpan> shard_spans;
  // What the optimizer steps: this rank's own parameters when sharded (the
  // large ones in pieces when the optimizer is elementwise), else all of them.
  StepPieces step_pieces;
  // Over step_pieces' tensors.
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  // Live recovery under a sharded optimizer: the next rank's shard, stepped
  // here too (optimizer_mirror.hpp); inactive otherwise.
  ShardMirror mirror;
  std::shared_ptr<HistoryBackend> history;
  CallbackList callbacks;
  // precision 16-mixed's loss scaling (disabled otherwise): checkpoints carry its scale.
  LossScaler loss_scaler{false, torch::Device(torch::kCPU)};

  RunParts();  // empty: tests fill in the parts they need
  // Every plugin of input.config, created through input.registry; an error
  // of a plugin's options is located in the config (ConfigPathError).
  explicit RunParts(const AssemblyInput& input);
  ~RunParts();
  // Shards the optimizer again for `run`'s rank and world size (live
  // recovery, at each change of membership): who steps what, this rank's
  // pieces, the same optimizer object over them with no state, and with
  // `mirror` the next rank's shard too. Nothing without a sharding wrapper.
  void shard_optimizer(const RunInfo& run, bool mirror);
  // Only the mirror of the next rank's shard (`on`), or none: the
  // membership the shards were made for is `run`'s.
  void mirror_next_shard(const RunInfo& run, bool on);
  RunParts(const RunParts&) = delete;
  RunParts& operator=(const RunParts&) = delete;

 private:
  // What `rank` steps of shard_spans (all parameters without them).
  StepPieces pieces_of(int rank) const;
  // The most elements of a piece a sharded optimizer steps (0: uncut).
  std::int64_t piece_elements() const;
};

}  // namespace skein::core
