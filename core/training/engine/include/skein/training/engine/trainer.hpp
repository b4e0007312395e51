#pragma once
// The epoch engine: a loop over the parts of a run (skein/training/*.hpp),
// each with one job. docs/development.md, "The engine's parts", maps them.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "skein/context.hpp"
#include "skein/training/config/config.hpp"
#include "skein/host/plugin_registry.hpp"
#include "skein/run.hpp"
#include "skein/run_store.hpp"
#include "skein/training/engine/batch_records.hpp"
#include "skein/training/engine/checkpoint_restore.hpp"
#include "skein/training/engine/checkpoint_writer.hpp"
#include "skein/training/device/device.hpp"
#include "skein/training/engine/eval_reduction.hpp"
#include "skein/training/engine/evaluation.hpp"
#include "skein/training/engine/forward_pass.hpp"
#include "skein/training/engine/live_recovery.hpp"
#include "skein/training/engine/run_parts.hpp"
#include "skein/training/engine/train_step.hpp"

namespace skein::core {

class SKEIN_EXPORT Trainer final : public TrainContext {
 public:
  // `log` receives the run's log lines (pass a null stream on non-main ranks).
  // `store` is the run's store (null for a single process without one).
  Trainer(const RunConfig& config, const PluginRegistry& registry, RunInfo run, std::ostream& log,
          const RunStore* store = nullptr);
  ~Trainer() override;

  // Runs all epochs (or until a stop is agreed). Returns the epochs run.
  // When it throws, every callback's on_exception has run first.
  long fit();
  // Restores everything a checkpoint holds (checkpoint_restore.hpp); fit()
  // then continues with the epoch after it, or, from a checkpoint written
  // inside an epoch, with that epoch's next train batch.
  void resume(const std::string& checkpoint_dir, const RestoreOptions& options = {});
  // ... with its trainer.json as read_checked_checkpoint gave it (read once).
  void resume(const std::string& checkpoint_dir, const CheckpointMeta& meta, const RestoreOptions& options = {});
  // Evaluates the dataset's test split; nullopt when it has none.
  std::optional<EvalResult> test();
  // on_test_end of every callback that is a TestReporter, with results.json's content.
  void report_test(const nlohmann::json& results);
  const std::string& stop_reason() const { return stop_reason_; }
  bool history_synchronized() const { return parts_.history->synchronizes_ranks(); }
  // Called on every rank after each epoch's history and checkpoints are written.
  void on_epoch_recorded(std::function<void(long epoch)> call) { epoch_recorded_ = std::move(call); }
  // When this process began its first train batch (for start-up measurements).
  std::optional<std::chrono::steady_clock::time_point> first_batch_at() const { return first_batch_at_; }
  // Train batches completed by this process (a failure inside the first is a failed start).
  long batches_done() const { return batches_done_; }
  // This process replaces a lost one of a run with live recovery (the
  // launcher's SKEIN_LIVE_JOIN): fit() first waits to be taken in and takes
  // the state of the run's leader. Before fit().
  void join_as_replacement();
  // Called after each change of membership, with the run as it is now.
  void on_world_change(std::function<void(const RunInfo&)> call) { world_changed_ = std::move(call); }
  // A replacement whose run ended before it was taken in: fit() trained nothing.
  bool left_before_joining() const { return left_before_joining_; }
  // Keeps a copy of the weights as each epoch begins, so that a run stopped
  // inside an epoch (Ctrl-C) can still save the model of the last complete one.
  void keep_epoch_weights(bool on) { keep_epoch_weights_ = on; }
  // Writes checkpoints/final (checkpoint_dir.hpp): the model at the end of
  // the last complete epoch, for export, predict and init_from. Main rank
  // only; not a collective. Returns the epoch it holds, 0 when it wrote
  // nothing (no epoch completed, or one is open and no copy was kept).
  long write_final_model();

  // --- The engine's steps: fit() drives them from the dataset, a Session
  // (skein/session.hpp) from its program's own batches. One implementation.
  // on_train_begin of every callback (once, before the first epoch).
  void begin_training();
  // Opens the next epoch: a history row, on_epoch_begin, learning-rate checks.
  void begin_epoch();
  // One training micro-batch (batch.index: its position in the epoch): TrainStep.
  void train_batch(Batch& batch);
  // One evaluation batch without gradients (EvalStep); `record`: as valid_* values.
  void eval_batch(Batch& batch, bool record, EvalSums& sums);
  // Closes the epoch: history sync across ranks, summary, on_epoch_end,
  // history.json, the agreed stop, requested checkpoints. Returns the stop.
  bool end_epoch();
  // on_train_end of every callback, and the history backend's close.
  void end_training();
  // The model's outputs in eval mode, without gradients.
  torch::Tensor predict(const torch::Tensor& inputs) { return forward_.predict(inputs); }
  // Writes a checkpoint (the format of checkpoint callbacks' ones) to `dir`
  // (in the background with the config's checkpoint_background).
  // A collective: every rank calls it.
  void save_checkpoint(const std::string& dir);
  // Waits for a checkpoint written in the background; throws its failure.
  void finish_checkpoints() { checkpoints_.finish_writes(); }
  // How long each checkpoint the callbacks asked for held training on this
  // rank (seconds): the whole write, or with checkpoint_background the copies.
  const std::vector<double>& checkpoint_stalls() const { return checkpoints_.stalls(); }
  // Train batches per epoch when the caller knows it (progress bars, the
  // last accumulation group); 0: unknown.
  void set_batches_per_epoch(long n) { batches_per_epoch_ = n; }
  const DataInfo& data_info() const { return parts_.data_info; }
  // "standardize": the scaling applied before every forward (inactive without it).
  const InputScaling& input_scaling() const { return parts_.splits.scaling; }
  const Loss& loss() const { return *parts_.loss; }
  const OptimizerFactory& optimizer_factory() const { return *parts_.optimizer_factory; }
  // The bytes of this rank's optimizer state tensors (a mirrored shard's
  // too), where the optimizer names them (elementwise_state_bytes).
  std::optional<std::size_t> optimizer_state_bytes();

  // TrainContext
  const RunInfo& run() const override { return run_; }
  History& history() override { return history_; }
  Model& model_base() override { return *parts_.model; }
  torch::optim::Optimizer& optimizer() override { return *parts_.optimizer; }
  Parallel& parallel() override { return *parts_.parallel; }
  long epoch() const override { return epoch_; }
  void request_stop(const std::string& reason) override;
  bool stop_requested() const override { return stop_; }
  std::ostream& log() override { return log_; }
  long batches_per_epoch() const override { return batches_per_epoch_; }
  const nlohmann::json& config() const override { return config_.resolved; }
  void request_checkpoint(const std::string& name, const std::vector<std::string>& remove_after) override {
    checkpoints_.request(name, remove_after);
  }
  std::string checkpoint_root() const override { return checkpoints_.root(); }
  const RunSettings& settings() const override { return settings_; }
  // Writes the batch values kept on the device into the batch log (on CUDA;
  // fit() does it where the log is read, a session after each step).
  void flush_records() { records_.flush(); }

 private:
  long fit_epochs();
  // fit_epochs(), ended without a failure when live recovery left this process out.
  long fit_live_guarded();
  // The epoch's train pass and validation; false when live recovery moved
  // the run to another membership inside it (the epoch then reopens).
  bool train_and_validate();
  // False when it ended early to take replacements in.
  bool train_epoch();
  // Live recovery (live_recovery.hpp): at a committed optimizer step, takes
  // waiting replacements in (true: the membership changed).
  bool after_committed_step();
  // After a failed step or validation: the survivors' new membership.
  void recover(const std::string& why);
  // recover() until one succeeds; throws what it cannot recover from.
  void recover_until_done(std::string why);
  static bool recoverable(const std::exception& e);
  // This process's part in membership `m`: its rank, the new group, and the
  // leader's state (`at`: where this process was, for the leader's checkpoint,
  // with its world size then; null for a replacement, which has no state).
  void move_to(const Membership& m, const EpochPosition* at, int world_size_was);
  void take_leader_state(const EpochPosition* at, int world_size_was);
  // The hand-over's checkpoint, as bytes, on every member: the leader's
  // (written by it, of its state at `at`), or under a sharded optimizer one
  // put together from the members' shards or kept from the last hand-over.
  std::string hand_over_bytes(const std::string& dir, const EpochPosition* at, int world_size_was);
  // Writes the leader's checkpoint of `at` into `dir`, its world size then
  // `world_size_was`.
  void write_hand_over(const std::string& dir, const EpochPosition& at, int world_size_was,
                       const torch::optim::Optimizer* whole_optimizer);
  bool sharded() const { return !parts_.shard_spans.empty(); }
  void check_live_history() const;
  void check_same_parameters();
  EvalResult evaluate(const DataSplit& split, bool record);
  // The epoch a mid-epoch checkpoint left open, as it was when written.
  void reopen_epoch();
  bool agree_on_stop();
  void check_learning_rates();
  // Stops at a batch boundary once Ctrl-C or SIGTERM asked (interrupt.hpp).
  void check_interrupt(long batch, const char* what) const;
  EpochPosition position() const;
  EpochPosition committed_position();
  StepParts step_parts();

  RunConfig config_;
  RunSettings settings_{config_.max_epochs, config_.batch_size, config_.accumulate_steps};
  DeviceChoice device_;  // the config's "device" resolved for this process
  RunInfo run_;          // its device is device_'s
  std::ostream& log_;
  RunParts parts_;
  History history_;
  BatchRecords records_{history_, device_.device.is_cuda()};
  ForwardPass forward_;
  TrainStep train_step_;
  EvalStep eval_step_;
  CheckpointWriter checkpoints_;
  std::function<void(long)> epoch_recorded_;
  long epoch_ = 0;
  long start_epoch_ = 1;
  bool epoch_open_ = false;  // begin_epoch ran, end_epoch not yet
  bool resized_ = false;     // resumed on another world size; the next epoch records it
  long epoch_batches_ = 0;   // train batches of the open epoch done
  std::chrono::steady_clock::time_point epoch_started_;
  std::optional<OpenEpoch> reopen_;  // what reopen_epoch restores (resume)
  // The open epoch's pass segments before the one this run trains (a resume
  // on another world size began a new one), and the batch it began at.
  std::vector<PassSegment> pass_before_;
  long segment_first_batch_ = 0;
  std::optional<std::chrono::steady_clock::time_point> first_batch_at_;
  long batches_done_ = 0;
  long batches_per_epoch_ = 0;
  bool stop_ = false;
  std::string stop_reason_;
  bool keep_epoch_weights_ = false;
  std::vector<torch::Tensor> epoch_weights_;  // parameters and buffers as the open epoch began
  const RunStore* store_;
  std::unique_ptr<LiveRecovery> live_;  // null without live recovery
  long committed_batches_ = 0;          // of the open epoch: up to its last optimizer step
  int segment_world_ = run_.world_size;  // the world size the open epoch's pass segment is trained on
  int failures_in_a_row_ = 0;           // recoveries that kept every member, no step committed since
  std::optional<nlohmann::json> recovery_;  // the last recovery, recorded at the next committed step
  std::optional<std::chrono::steady_clock::time_point> failed_at_;
  bool left_before_joining_ = false;
  // Live recovery under a sharded optimizer (live_shards.hpp): the ids of
  // the membership this process's shards are of (none for a replacement),
  // and the last hand-over's checkpoint until a step is committed after it.
  std::vector<int> shards_of_;
  std::string kept_hand_over_;
  std::function<void(const RunInfo&)> world_changed_;
};

}  // namespace skein::core
