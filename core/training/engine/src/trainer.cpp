#include "skein/training/engine/trainer.hpp"

#include <limits>
#include <sstream>
#include <utility>

#include <boost/filesystem.hpp>
#include <torch/utils.h>

#include "skein/training/device/malloc_tuning.hpp"
#include "skein/training/checkpoint/checkpoint_dir.hpp"
#include "skein/host/interrupt.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/errors.hpp"
#include "skein/training/engine/epoch_summary.hpp"

namespace skein::core {

namespace {

// The run as the plugins see it: with the config's seed and the device
// chosen. Allocation is tuned first, for every program that trains through a
// Trainer (once per process).
RunInfo prepared(RunInfo run, const RunConfig& config, const DeviceChoice& device) {
  tune_allocator_for_training();
  run.seed = config.seed;
  run.device = device.device.str();
  if (config.precision == Precision::fp16_mixed && !device.device.is_cuda())
    throw ConfigPathError(run_key::kPrecision, "precision: \"16-mixed\" needs a CUDA device, and this run is on the CPU (" +
                                           device.why + "); on the CPU use \"bf16-mixed\"");
  return run;
}

}  // namespace

Trainer::Trainer(const RunConfig& config, const PluginRegistry& registry, RunInfo run, std::ostream& log,
                 const RunStore* store)
    : config_(config),
      device_(choose_device(config_.device, run)),
      run_(prepared(std::move(run), config_, device_)),
      log_(log),
      parts_(AssemblyInput{config_, registry, run_, log_, store}),
      forward_({*parts_.model, *parts_.loss, parts_.splits.scaling, parts_.data_info, config_.model.record->name,
                config_.loss.record->name, config_.precision, device_.device, &log_}),
      train_step_(step_parts(), config_.accumulate_steps, &parts_.loss_scaler),
      eval_step_(step_parts()),
      checkpoints_(parts_, history_, config_, run_, store),
      store_(store) {
  live_ = LiveRecovery::make(*parts_.parallel, run_, store_, false);
  if (live_) {
    check_live_history();
    // A sharded optimizer: each shard's state on two ranks (optimizer_mirror.hpp).
    parts_.mirror_next_shard(run_, true);
    if (sharded()) shards_of_ = Membership::initial(run_.world_size).members;
  }
  if (parts_.data)
    batches_per_epoch_ = train_batches_per_epoch(parts_.splits.train.size(), run_.world_size, config_.batch_size);
  log_ << "Device: " << run_.device << " (" << device_.why << ")";
  if (config_.precision != Precision::fp32) log_ << ", precision " << precision_name(config_.precision);
  log_ << "\n";
}

Trainer::~Trainer() = default;

StepParts Trainer::step_parts() {
  return {forward_, *parts_.model, *parts_.optimizer, *parts_.parallel, *parts_.loss,
          history_, records_,      parts_.callbacks,  *this, &parts_.step_pieces, parts_.optimizer_factory.get(),
          &parts_.mirror};
}

EpochPosition Trainer::position() const {
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - epoch_started_;
  std::vector<PassSegment> passes = pass_before_;
  passes.push_back({segment_world_, epoch_batches_ - segment_first_batch_});
  return {epoch_, epoch_open_, epoch_batches_, seconds.count(), std::move(passes)};
}

long Trainer::fit() {
  try {
    return fit_live_guarded();
  } catch (const std::exception& e) {
    parts_.callbacks.notify_failure(*this, e.what());
    throw;
  } catch (...) {
    parts_.callbacks.notify_failure(*this, "unknown failure");
    throw;
  }
}

long Trainer::fit_epochs() {
  if (!parts_.data) throw ConfigError("data: missing (the dataset plugin and its options: {\"plugin\": NAME, ...})");
  if (live_) {
    const std::optional<Membership> first = live_->start();
    if (!first) {
      left_before_joining_ = true;
      return 0;
    }
    try {
      move_to(*first, nullptr, run_.world_size);
    } catch (const std::exception& e) {  // a member lost while a replacement is taken in
      if (!recoverable(e)) throw;
      recover_until_done(e.what());
    }
  }
  begin_training();
  epoch_ = start_epoch_ - 1;
  while (epoch_ < config_.max_epochs) {
    if (reopen_) {
      reopen_epoch();
    } else {
      begin_epoch();
    }
    if (!train_and_validate()) continue;  // another membership: the epoch reopens where its leader was
    if (end_epoch()) break;
  }
  const long done = std::min<long>(epoch_, config_.max_epochs);
  end_training();
  return done;
}

bool Trainer::train_and_validate() {
  if (!live_) {
    train_epoch();
    if (parts_.splits.valid.size() > 0) evaluate(parts_.splits.valid, true);
    return true;
  }
  try {
    if (!train_epoch()) return false;
    if (parts_.splits.valid.size() > 0) evaluate(parts_.splits.valid, true);
    // A rank lost during the pass is found here, before the epoch's history
    // sync through the store (which would wait for it up to the run's timeout).
    std::vector<double> done{1};
    parts_.parallel->all_reduce_sum(done);
    return true;
  } catch (const std::exception& e) {
    if (!recoverable(e)) throw;
    recover_until_done(e.what());
    return false;
  }
}

bool Trainer::train_epoch() {
  const DataSplit& split = parts_.splits.train;
  Prefetcher::Options fetch = pass_fetch_options(parts_.splits, config_, run_, epoch_, true, 1);
  fetch.first = static_cast<std::size_t>(epoch_batches_);
  if (!split.in_memory())  // a streaming split's batches are checked as they come, on the host
    fetch.check_targets = [this](const torch::Tensor& t) { parts_.loss->check_targets(t, parts_.data_info, "train"); };
  // This pass segment's batches (the whole pass unless a resume on another
  // world size re-sharded the rest of the epoch), from the first not trained.
  std::vector<std::vector<std::int64_t>> batches =
      pass_segment_batches(split.size(), run_, config_.batch_size, config_.seed, epoch_, pass_before_);
  fetch.first = static_cast<std::size_t>(epoch_batches_ - segment_first_batch_);
  batches_per_epoch_ = segment_first_batch_ + static_cast<long>(batches.size());
  Prefetcher data(split, std::move(batches), fetch);
  long index = epoch_batches_;
  while (auto fetched = data.next()) {
    check_interrupt(index, "batch");
    Batch batch{fetched->inputs, fetched->targets};
    batch.index = index++;
    train_batch(batch);
    // Checkpoints asked for inside the epoch (every_n_steps) are written
    // where an optimizer step has just been taken: no gradient is pending.
    if (batch.optimizer_step && checkpoints_.requested()) {
      records_.flush();
      checkpoints_.write_requested(position());
    }
    if (live_ && batch.optimizer_step && after_committed_step()) return false;
  }
  records_.flush();
  return true;
}

void Trainer::train_batch(Batch& batch) {
  if (!first_batch_at_) first_batch_at_ = std::chrono::steady_clock::now();
  // Live recovery goes on after the last optimizer step this process took,
  // also when the batch fails after it (in a sharded wrapper's broadcast of
  // what it stepped, in a callback): the step is applied here.
  const long steps = train_step_.steps();
  auto note_step = [&] {
    if (train_step_.steps() != steps) committed_batches_ = batch.index + 1;
  };
  try {
    train_step_.run(batch, batches_per_epoch_);
  } catch (...) {
    note_step();
    throw;
  }
  note_step();
  ++batches_done_;
  epoch_batches_ = batch.index + 1;
}

EvalResult Trainer::evaluate(const DataSplit& split, bool record) {
  torch::NoGradGuard no_grad;
  parts_.model->eval();
  // Every rank evaluates the model rank 0 saves: its buffers too.
  if (auto* sync = dynamic_cast<BufferSync*>(parts_.parallel.get())) sync->sync_buffers();
  Prefetcher::Options fetch = pass_fetch_options(parts_.splits, config_, run_, epoch_, false, record ? 2 : 3);
  if (!split.in_memory())
    fetch.check_targets = [this, record](const torch::Tensor& t) {
      parts_.loss->check_targets(t, parts_.data_info, record ? "valid" : "test");
    };
  Prefetcher data(split, eval_pass_batches(split.size(), run_, config_.batch_size), fetch);
  EvalSums sums;
  sums.unrecorded = !record;
  long index = 0;
  while (auto fetched = data.next()) {
    check_interrupt(index, record ? "validation batch" : "test batch");
    Batch batch{fetched->inputs, fetched->targets};
    batch.index = index++;
    eval_step_.run(batch, record, sums);
  }
  return reduce_eval(std::move(sums), *parts_.parallel, parts_.loss->classification());
}

void Trainer::eval_batch(Batch& batch, bool record, EvalSums& sums) { eval_step_.run(batch, record, sums); }

void Trainer::begin_training() {
  if (run_.is_main() && !run_.run_dir.empty()) remove_partial_checkpoints(checkpoint_root());
  parts_.callbacks.each("on_train_begin", [&](Callback& cb) { cb.on_train_begin(*this); });
}

void Trainer::begin_epoch() {
  if (keep_epoch_weights_) {
    torch::NoGradGuard no_grad;
    epoch_weights_.clear();
    for (const auto& p : parts_.model->parameters()) epoch_weights_.push_back(p.detach().clone());
    for (const auto& b : parts_.model->buffers()) epoch_weights_.push_back(b.detach().clone());
  }
  epoch_open_ = true;
  epoch_batches_ = 0;
  committed_batches_ = 0;
  kept_hand_over_.clear();  // of the epoch before
  pass_before_.clear();
  segment_first_batch_ = 0;
  ++epoch_;
  epoch_started_ = std::chrono::steady_clock::now();
  history_.new_epoch();
  if (std::exchange(resized_, false))  // the first epoch on a new world size says so
    history_.record(history_key::kWorldSize, run_.world_size);
  parts_.callbacks.each("on_epoch_begin", [&](Callback& cb) { cb.on_epoch_begin(*this); });
  check_learning_rates();
  parts_.model->train();
}

void Trainer::reopen_epoch() {
  OpenEpoch open = std::move(*reopen_);
  reopen_.reset();
  epoch_weights_.clear();  // the weights the epoch began with are not in the checkpoint
  epoch_open_ = true;
  ++epoch_;
  epoch_batches_ = open.next_batch;
  committed_batches_ = epoch_batches_;
  epoch_started_ = std::chrono::steady_clock::now() -
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(open.seconds));
  history_.new_epoch();
  for (auto it = open.record.begin(); it != open.record.end(); ++it)
    if (it.key() != history_key::kEpoch) history_.record(it.key(), it.value());
  if (std::exchange(resized_, false)) history_.record(history_key::kWorldSize, run_.world_size);
  for (const auto& rows : open.batches) append_rows(history_.batches(), BatchLog::from_bytes(rows));
  pass_before_ = std::move(open.before);
  segment_first_batch_ = open.segment_first_batch;
  check_learning_rates();
  parts_.model->train();
}

bool Trainer::end_epoch() {
  records_.flush();  // a session's steps
  if (parts_.loss_scaler.enabled())
    history_.record(history_key::kSkippedSteps, static_cast<double>(parts_.loss_scaler.take_skipped()));
  parts_.history->sync_epoch(history_);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - epoch_started_;
  std::vector<double> seconds{took.count()};
  parts_.parallel->all_reduce_max(seconds);  // the epoch lasts as long as its slowest rank
  summarize_epoch(history_, seconds[0]);
  epoch_open_ = false;
  const CallbackList& callbacks = parts_.callbacks;
  callbacks.each_as<EpochScorer>("on_epoch_scored", [&](EpochScorer& s) { s.on_epoch_scored(*this); });
  mark_best_of_epoch_scores(history_);
  callbacks.each("on_epoch_end", [&](Callback& cb) { cb.on_epoch_end(*this); });
  callbacks.each_as<EpochReporter>("on_epoch_recorded", [&](EpochReporter& r) { r.on_epoch_recorded(*this); });
  // A checkpoint still written in the background is done (or its failure
  // thrown) before this epoch's files: at most one write in flight.
  if (checkpoints_.requested()) checkpoints_.finish_writes();
  if (run_.is_main() && !run_.run_dir.empty()) history_.save(run_files::path(run_.run_dir, run_files::kHistory));
  const bool stop = agree_on_stop();
  checkpoints_.write_requested(position());
  if (epoch_recorded_) epoch_recorded_(epoch_);
  return stop;
}

void Trainer::end_training() {
  checkpoints_.finish_writes();  // the callbacks' train end sees every checkpoint complete
  parts_.callbacks.each("on_train_end", [&](Callback& cb) { cb.on_train_end(*this); });
  parts_.history->close();
  if (live_ && run_.is_main()) live_->close(run_.world_size);
}

bool Trainer::agree_on_stop() {
  std::vector<double> flag{stop_ ? 1.0 : 0.0};
  parts_.parallel->all_reduce_sum(flag);
  if (flag[0] > 0 && !stop_) request_stop("stop requested by another rank");
  return flag[0] > 0;
}

void Trainer::request_stop(const std::string& reason) {
  if (!stop_) stop_reason_ = reason;
  stop_ = true;
}

// A callback (a schedule, say) may have driven a rate out of range: training
// on would only produce NaN. Every rank has the same rates, so all stop here.
void Trainer::check_learning_rates() {
  const auto& groups = parts_.optimizer->param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const double lr = groups[g].options().get_lr();
    // Parameters are float32: a rate beyond float's range cannot be applied.
    if (!(lr >= 0 && lr <= std::numeric_limits<float>::max())) {
      std::ostringstream what;
      what << "epoch " << epoch_ << ": the learning rate of parameter group " << g << " is " << lr
           << ", not a finite float32 (set by a callback such as lr_scheduler); stopping";
      throw std::runtime_error(what.str());
    }
  }
}

void Trainer::check_interrupt(long batch, const char* what) const {
  if (const int signal = pending_interrupt())
    throw Interrupted(signal, "interrupted by " + signal_text(signal) + " at epoch " + std::to_string(epoch_) + ", " +
                                  what + " " + std::to_string(batch + 1));
}

void Trainer::resume(const std::string& dir, const RestoreOptions& options) {
  checkpoints_.finish_writes();
  resume(dir, read_checked_checkpoint(dir), options);
}

namespace {
// On another world size (`was` ranks, 0: the same): the global batch before
// and after, at the same learning rate.
std::string global_batch_change(int was, const RunInfo& run, const RunConfig& config) {
  if (was == 0) return "";
  const long per_rank = config.batch_size * config.accumulate_steps;
  return "; the global batch " + std::to_string(was * per_rank) + " -> " + std::to_string(run.world_size * per_rank) +
         " samples per optimizer step at the same learning rate (rescaling: docs/user-guide.md, "
         "\"Checkpoints and resume\")";
}
}  // namespace

void Trainer::resume(const std::string& dir, const CheckpointMeta& meta, const RestoreOptions& options) {
  checkpoints_.finish_writes();  // a session may resume from the checkpoint it has just saved
  Restored restored = restore_checkpoint(dir, meta, parts_, history_, config_, run_, options);
  records_.intern();  // the history was replaced
  reopen_ = std::move(restored.open);
  if (!restored.note.empty())
    log_ << restored.note << global_batch_change(restored.world_size_was, run_, config_) << "\n";
  resized_ = restored.world_size_was != 0;
  epoch_ = restored.epoch;
  start_epoch_ = epoch_ + 1;
}

void Trainer::save_checkpoint(const std::string& dir) {
  const auto path = boost::filesystem::absolute(dir).lexically_normal();
  const std::string name = path.filename().string();
  if (name.empty() || name == "." || name == ".." || name[0] == '.')
    throw ConfigError("save_checkpoint: '" + dir + "' does not end in a checkpoint directory name");
  checkpoints_.save(path.parent_path().string(), name, position());
}

long Trainer::write_final_model() {
  const long epoch = epoch_open_ ? epoch_ - 1 : epoch_;
  if (!run_.is_main() || run_.run_dir.empty() || epoch <= 0) return 0;
  if (epoch_open_) {
    if (epoch_weights_.empty()) return 0;
    // The run is over: the model goes back to where the open epoch began.
    torch::NoGradGuard no_grad;
    std::size_t i = 0;
    for (auto& p : parts_.model->parameters()) p.copy_(epoch_weights_[i++]);
    for (auto& b : parts_.model->buffers()) b.copy_(epoch_weights_[i++]);
  }
  checkpoints_.write(checkpoint_root(), kFinalModel, position(), CheckpointParts{true, epoch});
  return epoch;
}

std::optional<EvalResult> Trainer::test() {
  if (!parts_.splits.test) return std::nullopt;
  return evaluate(*parts_.splits.test, false);
}

void Trainer::report_test(const nlohmann::json& results) {
  parts_.callbacks.each_as<TestReporter>("on_test_end", [&](TestReporter& r) { r.on_test_end(*this, results); });
}

}  // namespace skein::core
