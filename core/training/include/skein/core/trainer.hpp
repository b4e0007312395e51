#pragma once
#include <functional>
// The training loop: builds every plugin of a RunConfig and runs the epochs.
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>

#include "skein/callback.hpp"
#include "skein/context.hpp"
#include "skein/core/checkpoint_meta.hpp"
#include "skein/core/config.hpp"
#include "skein/core/data_split.hpp"
#include "skein/core/input_scaling.hpp"
#include "skein/core/plugin_registry.hpp"
#include "skein/core/run.hpp"
#include "skein/dataset.hpp"
#include "skein/history_backend.hpp"
#include "skein/loss.hpp"
#include "skein/optimizer.hpp"
#include "skein/parallel.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/run.hpp"
#include "skein/run_store.hpp"

namespace skein::core {


// Loss and accuracy summed over every rank's share of a split.
struct EvalResult {
  double loss = 0;
  std::optional<double> accuracy;  // classification losses, or a loss that records "acc"
  std::int64_t samples = 0;
  // The loss's other recorded values (Loss::metrics), sample-weighted means.
  std::map<std::string, double> metrics;
  // Classification losses, unrecorded passes (the test split): samples by
  // [true class][predicted class], over all ranks.
  std::vector<std::vector<std::int64_t>> confusion;
};

// What a checkpoint holds: everything to resume, or only the model (final).
struct CheckpointParts {
  bool model_only = false;  // model files and trainer.json, rank 0 alone
  long epoch = -1;          // the epoch it is recorded as; -1: the current one
};

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
  // Restores everything a checkpoint holds (see trainer_checkpoint.cpp);
  // fit() then continues with the epoch after it, or, from a checkpoint
  // written inside an epoch, with that epoch's next train batch.
  void resume(const std::string& checkpoint_dir);
  // Whether the resumed checkpoint was written inside an epoch (only fit()
  // continues such an epoch; a Session cannot).
  bool resumes_mid_epoch() const { return reopen_.has_value(); }
  // Evaluates the dataset's test split; nullopt when it has none.
  std::optional<EvalResult> test();
  // on_test_end of every callback that is a TestReporter, with results.json's content.
  void report_test(const nlohmann::json& results);
  const std::string& stop_reason() const { return stop_reason_; }
  bool history_synchronized() const { return backend_->synchronizes_ranks(); }
  // Called on every rank after each epoch's history and checkpoints are written.
  void on_epoch_recorded(std::function<void(long epoch)> call) { epoch_recorded_ = std::move(call); }
  // When this process began its first train batch (for start-up measurements).
  std::optional<std::chrono::steady_clock::time_point> first_batch_at() const { return first_batch_at_; }
  // Train batches completed by this process (a failure inside the first is a failed start).
  long batches_done() const { return batches_done_; }
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
  // One training micro-batch (batch.index: its position in the epoch):
  // forward, loss, backward, gradient sync and optimizer step when its
  // accumulation group completes; records train_loss and the loss's values.
  void train_batch(Batch& batch);
  // loss * samples, correct, samples of this rank's evaluation batches.
  struct EvalSums {
    std::vector<double> values{0.0, 0.0, 0.0};
    std::map<std::string, double> metrics;  // name -> sum of value * batch size (unrecorded passes)
    torch::Tensor confusion;                 // int64 [C, C] (unrecorded passes, classification)
    bool unrecorded = false;                 // the test split: no valid_* records
    long batches = 0;
  };
  // One evaluation batch without gradients; `record`: as valid_* values.
  void eval_batch(Batch& batch, bool record, EvalSums& sums);
  // Sums over every rank (a collective) as a result.
  EvalResult reduce_eval(EvalSums sums);
  static void add_confusion(EvalSums& sums, const Batch& batch);
  std::vector<std::vector<std::int64_t>> reduce_confusion(const torch::Tensor& local);
  // Closes the epoch: history sync across ranks, summary, on_epoch_end,
  // history.json, the agreed stop, requested checkpoints. Returns the stop.
  bool end_epoch();
  // on_train_end of every callback, and the history backend's close.
  void end_training();
  // The model's outputs in eval mode, without gradients.
  torch::Tensor predict(const torch::Tensor& inputs);
  // Writes a checkpoint (the format of checkpoint callbacks' ones) to `dir`.
  // A collective: every rank calls it.
  void save_checkpoint(const std::string& dir);
  // Train batches per epoch when the caller knows it (progress bars, the
  // last accumulation group); 0: unknown.
  void set_batches_per_epoch(long n) { batches_per_epoch_ = n; }
  const DataInfo& data_info() const { return data_info_; }
  // "standardize": the scaling applied before every forward (inactive without it).
  const InputScaling& input_scaling() const { return input_scaling_; }
  const Loss& loss() const { return *loss_; }

  // TrainContext
  const RunInfo& run() const override { return run_; }
  History& history() override { return history_; }
  Model& model_base() override { return *model_; }
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }
  Parallel& parallel() override { return *parallel_; }
  long epoch() const override { return epoch_; }
  void request_stop(const std::string& reason) override;
  bool stop_requested() const override { return stop_; }
  std::ostream& log() override { return log_; }
  long batches_per_epoch() const override { return batches_per_epoch_; }
  const nlohmann::json& config() const override { return config_.resolved; }
  void request_checkpoint(const std::string& name,
                          const std::vector<std::string>& remove_after) override;
  std::string checkpoint_root() const override { return run_files::path(run_.run_dir, run_files::kCheckpoints); }

 private:
  void train_epoch();
  // Runs `hook` of every callback in order, marking which plugin runs (for
  // crash reports); a non-standard exception becomes one naming the plugin.
  void each_callback(const char* hook, const std::function<void(Callback&)>& call);
  long fit_epochs();
  // Calls every callback's on_exception; what they throw becomes a warning.
  void notify_failure(const std::string& error);
  EvalResult evaluate(const DataSplit& split, bool record);
  // How batches of a pass are fetched (`salt` tells passes of one epoch apart).
  Prefetcher::Options prefetch_options(bool augment, std::uint64_t salt) const;
  void summarize_epoch(double seconds);
  void mark_best(const std::string& key);
  void mark_best_of_epoch_scores();
  bool agree_on_stop();
  void intern_batch_keys();
  // Forward pass and loss of a batch (sets batch.outputs).
  torch::Tensor compute_loss(Batch& batch);
  // The loss plugin's extra values, as <phase>_<name>.
  void record_loss_metrics(const Batch& batch, const char* phase);
  void write_pending_checkpoints();
  void write_checkpoint(const std::string& name);  // trainer_checkpoint.cpp
  void write_checkpoint_in(const std::string& root, const std::string& name, const CheckpointParts& parts = {});
  // Stops at a batch boundary once Ctrl-C or SIGTERM asked (interrupt.hpp).
  void check_interrupt(long batch, const char* what) const;
  // Every rank's `mine`, gathered on rank 0 through the run's store (empty
  // elsewhere); a collective: every rank calls it for the same part.
  std::vector<std::string> gather_on_main(const std::string& name, const std::string& part, std::string mine);
  nlohmann::json checkpoint_meta(const nlohmann::json& checksums) const;
  void restore_model(const std::string& file);
  void restore_optimizer(const std::string& file, const std::vector<double>& lrs);
  void restore_rng(const std::string& file);
  void restore_parallel_state(const std::string& file);
  void open_splits();
  // The epoch a mid-epoch checkpoint left open, as it was when written
  // (on_epoch_begin ran before: its effects are in the callbacks' states).
  void reopen_epoch();
  // Mid-epoch checkpoints: this rank's part of the open epoch (open_epoch.json).
  nlohmann::json open_epoch_part() const;
  void restore_open_epoch(const CheckpointMeta& meta, const std::string& dir);
  void restore_callbacks(const std::vector<CheckpointMeta::CallbackState>& states, const std::string& where);
  // The same state under another name (e.g. "best" of the epoch just written):
  // hard links to the files of `from`, renamed into place. Rank 0 only.
  void link_checkpoint(const std::string& from, const std::string& name);

  RunConfig config_;
  RunInfo run_;
  std::ostream& log_;
  std::deque<Options> plugin_options_;  // each plugin's options, for as long as the plugins live
  const RunStore* store_;
  std::shared_ptr<Loss> loss_;
  std::shared_ptr<Dataset> data_;
  DataInfo data_info_;
  InputScaling input_scaling_;  // "standardize"
  std::shared_ptr<Model> model_;
  std::shared_ptr<Parallel> parallel_;
  std::shared_ptr<HistoryBackend> backend_;
  std::vector<std::shared_ptr<Callback>> callbacks_;
  // The factory's library holds the optimizer's code: it outlives the optimizer.
  std::shared_ptr<OptimizerFactory> optimizer_factory_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  History history_;
  DataSplit train_, valid_;
  std::optional<DataSplit> test_;
  std::unique_ptr<boost::asio::thread_pool> pool_;  // fetches streaming batches ahead
  long epoch_ = 0;
  long start_epoch_ = 1;
  std::optional<std::chrono::steady_clock::time_point> first_batch_at_;
  std::chrono::steady_clock::time_point epoch_started_;
  long batches_done_ = 0;
  long batches_per_epoch_ = 0;
  struct CheckpointRequest {
    std::string name;
    std::vector<std::string> remove_after;
  };
  std::vector<CheckpointRequest> pending_checkpoints_;
  void check_learning_rates();
  bool stop_ = false;
  std::string stop_reason_;
  // Interned BatchLog keys.
  int k_train_loss_, k_train_size_, k_valid_loss_, k_valid_acc_, k_valid_size_;
  std::map<std::string, int> k_metrics_;
  bool outputs_checked_ = false;
  std::function<void(long)> epoch_recorded_;
  bool keep_epoch_weights_ = false;
  bool epoch_open_ = false;                 // begin_epoch ran, end_epoch not yet
  long epoch_batches_ = 0;                  // train batches of the open epoch done
  struct OpenEpoch {                        // what reopen_epoch restores (resume)
    long next_batch = 0;
    nlohmann::json record;
    std::string batches;  // BatchLog::to_bytes of this rank's records
    double seconds = 0;
  };
  std::optional<OpenEpoch> reopen_;
  std::vector<torch::Tensor> epoch_weights_;  // parameters and buffers as the open epoch began
};

}  // namespace skein::core
