#include "skein/training/engine/checkpoint_restore.hpp"

#include "skein/training/device/device.hpp"

#include <algorithm>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <boost/filesystem.hpp>
#include <torch/serialize.h>
#include <torch/utils.h>

#include "skein/training/checkpoint/checkpoint_meta.hpp"
#include "skein/training/engine/optimizer_shards.hpp"
#include "skein/training/checkpoint/script_pin.hpp"
#include "skein/errors.hpp"
#include "skein/io/input_file.hpp"
#include "skein/torch_compat/optimizer_archive.hpp"
#include "skein/training/device/tensor_bytes.hpp"
#include "skein/training/data/training_data.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

namespace {

// Runs `load`, naming `file` of the checkpoint when it fails.
void load_part(const std::string& where, const char* file, const std::function<void()>& load) {
  try {
    load();
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    throw ConfigError(where + "/" + file + " does not fit this run: " + first_line(e.what()));
  }
}

// torch::load gives a parameter the checkpoint's shape, whatever the model's:
// a model of another shape must be refused, not reshaped.
// Tensors land on the run's device whichever device wrote them.
void restore_model(std::shared_ptr<Model>& model, const std::string& file, const torch::Device& device) {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> shapes;
  for (const auto& p : model->named_parameters()) shapes.emplace_back(p.key(), p.value().sizes().vec());
  for (const auto& b : model->named_buffers()) shapes.emplace_back(b.key(), b.value().sizes().vec());
  std::ifstream model_in(file, std::ios::binary);
  torch::load(model, model_in, device);
  auto loaded = model->named_parameters();
  auto buffers = model->named_buffers();
  for (const auto& [name, shape] : shapes) {
    const torch::Tensor* t = loaded.find(name);
    if (!t) t = buffers.find(name);
    if (t && t->sizes().vec() != shape)
      throw std::runtime_error("'" + name + "' has shape " + c10::str(t->sizes()) + " there and " +
                               c10::str(c10::IntArrayRef(shape)) + " in this model");
  }
}

// The whole optimizer; a sharded one keeps its own parameters' states.
void restore_optimizer(RunParts& parts, const std::string& file, const std::vector<double>& lrs,
                       const torch::Device& device) {
  torch::serialize::InputArchive archive;
  archive.load_from(file, device);
  torch::optim::Optimizer& optimizer = *parts.optimizer;
  if (parts.shard_spans.empty()) {
    torch_compat::load_optimizer(optimizer, archive);
  } else {
    std::optional<RunningShard> mirror;
    if (parts.mirror.active()) mirror.emplace(parts.mirror.shard());
    load_optimizer_shard(*parts.optimizer_factory, {optimizer, parts.step_pieces}, parts.model->parameters(), archive,
                         mirror ? &*mirror : nullptr);
  }
  auto& groups = optimizer.param_groups();
  if (lrs.size() != groups.size()) throw std::runtime_error("the optimizer has another number of parameter groups");
  for (std::size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
}

// This rank's entry of a file that holds one tensor per rank.
torch::Tensor rank_entry(const std::string& file, const RunInfo& run, const char* what) {
  std::vector<torch::Tensor> all;
  torch::load(all, file);
  if (static_cast<int>(all.size()) != run.world_size)
    throw std::runtime_error(std::string("it holds the ") + what + " of another number of ranks");
  return all[static_cast<std::size_t>(run.rank)];
}

void restore_rng(const std::string& file, const RunInfo& run) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle to the global one
  generator.set_state(rank_entry(file, run, "states"));
}

// A run on CUDA continues its device's stream when the checkpoint has one
// for this rank (one written on the CPU has none: the device keeps the
// seeded stream); a run on the CPU has no use for it.
void restore_cuda_rng(const std::string& file, const RunInfo& run) {
  if (!torch::Device(run.device).is_cuda() || !fs::exists(file)) return;
  const torch::Tensor mine = rank_entry(file, run, "states");
  if (mine.numel() > 0) set_device_generator_state(run, mine);
}

// Rank r's bytes go back to rank r's wrapper. A checkpoint without the file
// (a wrapper that kept no state then) leaves the wrapper's fresh state.
void restore_parallel_state(Parallel& parallel, const std::string& file, const RunInfo& run) {
  auto* stateful = dynamic_cast<ParallelState*>(&parallel);
  if (!stateful || !fs::exists(file)) return;
  const torch::Tensor mine = rank_entry(file, run, "states");
  if (mine.scalar_type() != torch::kUInt8 || mine.dim() != 1) throw std::runtime_error("it is not a list of byte tensors");
  stateful->load_state(bytes_of(mine));
}

// A checkpoint written inside an epoch continues at the same sample only
// when the epoch is cut into the same batches; on another world size the
// rest of it is re-sharded (OpenEpoch says what each rank carries on).
OpenEpoch restore_open_epoch(const CheckpointMeta& meta, const std::string& dir, const RunParts& parts,
                             const RunConfig& config, const RunInfo& run) {
  const std::string where = "checkpoint " + dir;
  if (!parts.data) return {};  // a session fed by its program refuses the checkpoint before this (session.cpp)
  const CheckpointMeta::OpenEpoch& o = *meta.open_epoch;
  auto differs = [&](const char* what, long long then, long long now) {
    if (then != now)
      throw ConfigError(where + " was written inside epoch " + std::to_string(meta.epoch + 1) + " with " + what +
                        " " + std::to_string(then) + "; this run has " + std::to_string(now) +
                        " (continuing inside an epoch needs the same batches; remove " + dir +
                        " to resume from the newest checkpoint before it)");
  };
  const std::int64_t samples = parts.splits.train.size();
  differs("training samples", o.train_samples, samples);
  differs(run_key::kBatchSize, o.batch_size, config.batch_size);
  differs(run_key::kAccumulateSteps, o.accumulate_steps, config.accumulate_steps);
  OpenEpoch open;
  open.next_batch = o.next_batch;
  const long epoch = meta.epoch + 1;
  try {
    // Every segment checked against the batches it had (throws when one claims more).
    pass_rows_left(samples, config.batch_size, config.seed, epoch, o.passes);
    if (meta.world_size == run.world_size) {  // the segment it was written in goes on
      open.before.assign(o.passes.begin(), o.passes.end() - 1);
      open.segment_first_batch = o.next_batch - o.passes.back().batches_done;
    } else {  // the rest is re-sharded over this run's ranks
      open.before = o.passes;
      open.segment_first_batch = o.next_batch;
    }
  } catch (const std::invalid_argument& e) {
    throw ConfigError(where + ": bad trainer.json: " + e.what() + " (batches of " + std::to_string(config.batch_size) +
                      ")");
  }
  load_part(where, checkpoint_files::kOpenEpochBatches, [&] {
    std::vector<torch::Tensor> all;
    torch::load(all, dir + "/" + checkpoint_files::kOpenEpochBatches);
    if (static_cast<int>(all.size()) != meta.world_size)
      throw std::runtime_error("it holds the records of another number of ranks");
    for (int old = run.rank; old < meta.world_size; old += run.world_size) {
      open.batches.push_back(bytes_of(all[static_cast<std::size_t>(old)]));
      BatchLog::from_bytes(open.batches.back());  // throws now, not when the epoch reopens
    }
  });
  load_part(where, checkpoint_files::kOpenEpochParts, [&] {
    const auto text = read_whole_file(dir + "/" + checkpoint_files::kOpenEpochParts);
    if (!text) throw std::runtime_error(where + ": cannot read " + checkpoint_files::kOpenEpochParts);
    std::vector<OpenEpochRank> ranks = parse_open_epoch_ranks(*text, meta.world_size, where);
    OpenEpochRank& values = ranks[static_cast<std::size_t>(run.rank % meta.world_size)];
    open.record = std::move(values.record);
    for (const auto& r : ranks) open.seconds = std::max(open.seconds, r.seconds);
    parts.callbacks.restore(values.callbacks, where);
  });
  return open;
}

// What a restore replaces, as it was before: put back when any file of the
// checkpoint does not fit, so that a failed restore changes nothing (a
// session lives on after it). Tensors are kept, not copied: loading points
// a parameter at new storage (Tensor::set_), the old storage stays here.
class PartsBefore {
 public:
  PartsBefore(RunParts& parts, History& history, const RunInfo& run)
      : parts_(parts), history_(history), run_(run), history_before_(history) {
    for (const auto& p : parts.model->named_parameters()) tensors_.emplace_back(p.value(), p.value().detach());
    for (const auto& b : parts.model->named_buffers()) tensors_.emplace_back(b.value(), b.value().detach());
    torch::serialize::OutputArchive archive;
    parts.optimizer->save(archive);
    std::ostringstream out;
    archive.save_to(out);
    optimizer_ = out.str();
    for (auto& group : parts.optimizer->param_groups()) lrs_.push_back(group.options().get_lr());
    cpu_rng_ = at::detail::getDefaultCPUGenerator().get_state();
    cuda_rng_ = device_generator_state(run);
    if (auto* stateful = dynamic_cast<ParallelState*>(parts.parallel.get())) parallel_ = stateful->state();
    if (parts.loss_scaler.enabled()) scale_ = {parts.loss_scaler.current_scale(), parts.loss_scaler.growth_tracker()};
    callbacks_ = parts.callbacks.states();
  }

  // Best effort, each part on its own: the error being reported matters more.
  void put_back() {
    auto attempt = [](const std::function<void()>& step) {
      try {
        step();
      } catch (const std::exception& e) {
        warn("restoring the state before a failed checkpoint load: " + first_line(e.what()));
      }
    };
    attempt([&] {
      torch::NoGradGuard no_grad;
      for (auto& [live, before] : tensors_) live.set_(before);
    });
    attempt([&] {
      std::istringstream in(optimizer_);
      torch::serialize::InputArchive archive;
      archive.load_from(in);
      parts_.optimizer->load(archive);
      auto& groups = parts_.optimizer->param_groups();
      for (std::size_t i = 0; i < groups.size() && i < lrs_.size(); ++i) groups[i].options().set_lr(lrs_[i]);
    });
    attempt([&] {
      at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle to the global one
      generator.set_state(cpu_rng_);
    });
    attempt([&] {
      if (!cuda_rng_.empty()) set_device_generator_state(run_, tensor_of(cuda_rng_));
    });
    attempt([&] {
      if (auto* stateful = dynamic_cast<ParallelState*>(parts_.parallel.get())) stateful->load_state(parallel_);
    });
    attempt([&] {
      if (scale_) parts_.loss_scaler.restore(scale_->first, scale_->second);
    });
    attempt([&] { parts_.callbacks.restore(callbacks_, "the session's own state"); });
    history_ = history_before_;
  }

 private:
  RunParts& parts_;
  History& history_;
  const RunInfo& run_;
  History history_before_;
  std::vector<std::pair<torch::Tensor, torch::Tensor>> tensors_;  // live, as it was
  std::string optimizer_;
  std::vector<double> lrs_;
  torch::Tensor cpu_rng_;
  std::string cuda_rng_;
  std::string parallel_;
  std::optional<std::pair<double, std::int64_t>> scale_;
  std::vector<CheckpointMeta::CallbackState> callbacks_;
};

// Every file of the checkpoint into the parts (restore_checkpoint puts
// them back as they were when one fails).
Restored restore_parts(const CheckpointMeta& meta, const std::string& dir, RunParts& parts, History& history,
                       const RunConfig& config, const RunInfo& run, bool live) {
  const std::string where = "checkpoint " + dir;
  const bool resized = meta.world_size != run.world_size;
  torch::NoGradGuard no_grad;
  auto file = [&](const char* name) { return dir + "/" + name; };
  const torch::Device device(run.device);
  load_part(where, checkpoint_files::kModel,
            [&] { restore_model(parts.model, file(checkpoint_files::kModel), device); });
  load_part(where, checkpoint_files::kOptimizer,
            [&] { restore_optimizer(parts, file(checkpoint_files::kOptimizer), meta.lr, device); });
  Restored restored;
  if (!resized && !live) {
    load_part(where, checkpoint_files::kRng, [&] { restore_rng(file(checkpoint_files::kRng), run); });
    load_part(where, checkpoint_files::kCudaRng, [&] { restore_cuda_rng(file(checkpoint_files::kCudaRng), run); });
    load_part(where, checkpoint_files::kParallel,
              [&] { restore_parallel_state(*parts.parallel, file(checkpoint_files::kParallel), run); });
  } else {
    // Each rank's stream and state belonged to a rank of the old world.
    const long next_batch = meta.open_epoch ? meta.open_epoch->next_batch : 0;
    seed_generators(run, mixed_seed(mixed_seed(mixed_seed(config.seed, static_cast<std::uint64_t>(meta.epoch)),
                                               static_cast<std::uint64_t>(next_batch)),
                                    static_cast<std::uint64_t>(run.rank)));
    if (resized) restored.world_size_was = meta.world_size;
    if (resized) restored.note = "World size " + std::to_string(meta.world_size) + " -> " + std::to_string(run.world_size) +
                    " (" + where + "): each rank's random streams seeded again from the seed, the position and its rank";
    if (resized && dynamic_cast<ParallelState*>(parts.parallel.get()) && fs::exists(file(checkpoint_files::kParallel)))
      restored.note += "; the parallel wrapper's per-rank state (e.g. PowerSGD's error feedback) starts afresh";
  }
  load_part(where, checkpoint_files::kHistory, [&] { history = History::load(file(checkpoint_files::kHistory)); });
  // A checkpoint of another precision, or older, has none: the scale starts afresh.
  if (meta.loss_scale) parts.loss_scaler.restore(meta.loss_scale->scale, meta.loss_scale->growth_tracker);
  restored.epoch = meta.epoch;
  if (meta.open_epoch) {
    restored.open = restore_open_epoch(meta, dir, parts, config, run);  // with this rank's callback states
    if (resized) {
      const long since = restored.open->segment_first_batch - meta.open_epoch->passes.back().batches_done;
      restored.note += "; the rest of epoch " + std::to_string(meta.epoch + 1) + " after train batch " +
                       std::to_string(meta.open_epoch->next_batch) + " of each of the " +
                       std::to_string(meta.world_size) + " ranks" +
                       (since > 0 ? " (on " + std::to_string(meta.world_size) + " since batch " +
                                        std::to_string(since) + ")"
                                  : std::string()) +
                       " is re-sharded over " + std::to_string(run.world_size) + " by global sample index";
    }
  } else {
    parts.callbacks.restore(meta.callbacks, where);
  }
  return restored;
}

}  // namespace

Restored restore_checkpoint(const std::string& dir, RunParts& parts, History& history, const RunConfig& config,
                            const RunInfo& run, const RestoreOptions& options) {
  return restore_checkpoint(dir, read_checked_checkpoint(dir), parts, history, config, run, options);
}

Restored restore_checkpoint(const std::string& dir, const CheckpointMeta& meta, RunParts& parts, History& history,
                            const RunConfig& config, const RunInfo& run, const RestoreOptions& options) {
  const std::string where = "checkpoint " + dir;
  if (meta.model_only)
    throw ConfigError(where + " holds the model only (the model a run ended with: no optimizer state, history "
                      "or random state), so training cannot continue from it; load a full checkpoint (epoch_*, "
                      "step_*, or one save_checkpoint wrote), or start from its weights with the config's "
                      "\"init_from\" (skein export and predict take it as it is)");
  // A run cannot end inside an epoch: its final model would carry the
  // weights of part of epoch k under the label of epoch k - 1.
  if (meta.open_epoch && parts.data && meta.epoch + 1 > config.max_epochs)
    throw ConfigError(where + " was written inside epoch " + std::to_string(meta.epoch + 1) + ", beyond max_epochs " +
                      std::to_string(config.max_epochs) + "; resume with max_epochs " +
                      std::to_string(meta.epoch + 1) + " or more (--set max_epochs=" +
                      std::to_string(meta.epoch + 1) + ")");
  check_script_unchanged(*parts.model, meta, where);
  if (!options.undo_on_failure) return restore_parts(meta, dir, parts, history, config, run, options.live);
  PartsBefore before(parts, history, run);
  try {
    return restore_parts(meta, dir, parts, history, config, run, options.live);
  } catch (...) {
    before.put_back();
    throw;
  }
}

}  // namespace skein::core
