#include "skein/training/engine/run_parts.hpp"

#include "skein/training/checkpoint/warm_start.hpp"
#include "skein/errors.hpp"
#include "skein/training/config/located.hpp"
#include "skein/training/engine/optimizer_shards.hpp"

namespace skein::core {

namespace {

// The plugin `use` names, made with its options (kept in `kept`, alive as
// long as the parts, for a plugin that holds on to them).
template <class T>
std::shared_ptr<T> make_plugin(const AssemblyInput& in, const PluginUse& use, std::deque<Options>& kept,
                               const DataInfo* data = nullptr) {
  const Options& options = kept.emplace_back(use.make_options());
  return located(use, [&] { return in.registry.create<T>(*use.record, PluginArgs{options, in.run, data, in.store}); });
}

}  // namespace

RunParts::RunParts() = default;
RunParts::~RunParts() = default;

RunParts::RunParts(const AssemblyInput& in) {
  const RunConfig& config = in.config;
  const torch::Device device(in.run.device);
  torch::manual_seed(config.seed);
  loss = make_plugin<Loss>(in, config.loss, options);
  if (config.data.record) {
    data = make_plugin<Dataset>(in, config.data, options);
    data_info = located(config.data, [&] { return data->info(); });
    splits = open_training_data({*data, config.data, data_info, *loss}, config, in.run);
    splits.scaling = splits.scaling.on(device);
  } else {
    // A session fed by its program: the config's data_info sizes the model.
    data_info = config.data_info;
    if (config.standardize)
      throw ConfigError("standardize: needs the config's data (its training split gives the mean and std)");
  }

  // Model initialisation depends on the seed alone, not on what the dataset drew.
  torch::manual_seed(config.seed);
  model = make_plugin<Model>(in, config.model, options, &data_info);
  // Every rank reads the same file; ddp's broadcast then changes nothing.
  if (!config.init_from.empty()) {
    const WarmStartReport report = warm_start(*model, {config.init_from, config.init_strict});
    for (const auto& note : report.notes) in.log << note << "\n";
    if (!report.skipped.empty() && in.run.is_main()) warn(report.skipped);
  }

  // On its device before the wrapper sees it (ddp broadcasts the device's
  // tensors) and before the optimizer holds its parameters, as PyTorch asks.
  model->to(device);
  loss_scaler = LossScaler(config.precision == Precision::fp16_mixed, device);
  parallel = make_plugin<Parallel>(in, config.parallel, options);
  located(config.parallel, [&] { parallel->prepare(*model); });
  optimizer_factory = make_plugin<OptimizerFactory>(in, config.optimizer, options);
  // A wrapper that shards the optimizer's state: this rank's optimizer steps its own parameters.
  shard_spans = located(config.parallel, [&] {
    return core::shard_spans(*parallel, model->parameters(), in.run.world_size, piece_elements() > 0);
  });
  if (!shard_spans.empty() && config.precision == Precision::fp16_mixed)
    throw ConfigPathError(run_key::kPrecision, "precision: \"16-mixed\" does not go with parallel '" +
                                           config.parallel.record->name +
                                           "', which shards the optimizer (each rank would check and skip its own "
                                           "parameters' steps); use \"bf16-mixed\" or the parallel 'ddp'");
  step_pieces = pieces_of(in.run.rank);
  optimizer = located(config.optimizer, [&] { return optimizer_factory->create(step_pieces.tensors()); });

  history = make_plugin<HistoryBackend>(in, config.history, options);
  // Asked of the backend, not of its name: a third-party backend may sync too.
  if (in.run.world_size > 1 && in.run.is_main() && !history->synchronizes_ranks())
    warn("history '" + config.history.record->name +
         "' keeps each rank's own batches, so ranks may decide differently; choose a history backend "
         "that synchronizes ranks ('skein plugins' lists the history plugins)");
  for (const auto& use : config.callbacks) callbacks.add(use.record->name, make_plugin<Callback>(in, use, options));
}

// An elementwise optimizer steps a sharded run's large parameters in pieces (step_pieces.hpp).
std::int64_t RunParts::piece_elements() const {
  return dynamic_cast<const ElementwiseOptimizer*>(optimizer_factory.get()) ? kStepPieceElements : 0;
}

StepPieces RunParts::pieces_of(int rank) const {
  const auto params = model->parameters();
  if (shard_spans.empty()) return StepPieces(params, 0);
  return StepPieces(params, owned_spans(shard_spans, rank), piece_elements());
}

void RunParts::shard_optimizer(const RunInfo& run, bool with_mirror) {
  if (shard_spans.empty()) return;
  shard_spans = core::shard_spans(*parallel, model->parameters(), run.world_size, piece_elements() > 0);
  step_pieces = pieces_of(run.rank);
  // The same object: the engine's steps and the callbacks hold it.
  auto& groups = optimizer->param_groups();
  if (groups.size() != 1)
    throw ConfigError(std::string(run_key::kOptimizer) + ": live recovery under a sharding parallel wrapper needs an "
                      "optimizer of one parameter group; this one has " + std::to_string(groups.size()));
  groups.front().params() = step_pieces.tensors();
  optimizer->state().clear();
  mirror_next_shard(run, with_mirror);
}

void RunParts::mirror_next_shard(const RunInfo& run, bool on) {
  mirror = on && run.world_size > 1 && !shard_spans.empty()
               ? ShardMirror(*optimizer_factory, model->parameters(), shard_spans, (run.rank + 1) % run.world_size,
                             piece_elements())
               : ShardMirror();
}

}  // namespace skein::core
