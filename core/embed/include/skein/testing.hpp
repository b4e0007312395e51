#pragma once
// A test harness for plugins, the one Skein's own plugins are tested with.
// Harness creates a plugin by name with options exactly as `skein train`
// does (the same discovery and checks of the library, the same validation of
// the options: unknown keys, types, defaults, required ones); FakeRun is a
// TrainContext a test drives a callback through (epochs whose values the test
// records, batches, a model and optimizer, several ranks as threads) and
// whose requests (stop, checkpoint) and log the test reads.
// Datasets, losses, optimizers and models need no run: call them directly.
//
// Link skein::testing (find_package(Skein) provides it) and include
// <skein/testing.hpp>; see docs/plugin-authoring.md, "Testing a plugin".
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <torch/optim/sgd.h>
#include <torch/types.h>

#include "skein/callback.hpp"
#include "skein/context.hpp"
#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"
#include "skein/history.hpp"
#include "skein/model.hpp"
#include "skein/parallel.hpp"
#include "skein/run.hpp"

namespace skein::testing {

// A fresh folder under the system's temporary directory, removed with
// everything in it when the object goes.
class SKEIN_EXPORT TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // The folder, or `child` inside it.
  std::string str(const std::string& child = "") const;
  // Writes `bytes` to str(name); returns that path.
  std::string write(const std::string& name, const std::string& bytes) const;

 private:
  std::string path_;
};

struct HarnessOptions {
  // Plugin libraries (.so files) and folders of them. Besides these, the
  // harness searches where `skein train` does: Skein's installed plugin folder
  // and the folders of SKEIN_PLUGIN_PATH.
  std::vector<std::string> plugin_paths;
  // The run directory plugins resolve their outputs in. Empty: a fresh
  // temporary folder, removed with the harness.
  std::string run_dir;
};

class SKEIN_EXPORT Harness {
 public:
  explicit Harness(HarnessOptions options = {});
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  // Plugin `name` of the kind whose interface is I (Callback, Dataset, Model,
  // Loss, OptimizerFactory, HistoryBackend, Parallel), created with `options`
  // (a JSON object, validated and completed with defaults as in a config) and
  // run(). A bad option throws ConfigError (OptionError from the plugin) whose
  // message names the option as `skein train` prints it: the plugin is in the
  // config slot of its kind ("data (plugin 'csv')"; callbacks are numbered in
  // the order they are created: "callbacks[0] (plugin 'timer')"). `data` is what a
  // model plugin is sized from. The plugin's library stays loaded as long as
  // the object lives.
  template <class I>
  std::shared_ptr<I> create(const std::string& name, const nlohmann::json& options = nlohmann::json::object(),
                            const DataInfo* data = nullptr);

  // What plugins are created with, and what a FakeRun of this harness
  // reports: change rank, world_size, seed, ... before create(). run().run_dir
  // is the harness's run directory.
  RunInfo& run();
  const RunInfo& run() const;
  const std::string& run_dir() const;
  // Writes `bytes` to run_dir()/name (a test's input files); returns the path.
  std::string write_file(const std::string& name, const std::string& bytes) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Collectives of `world` ranks that are threads of one test: each call blocks
// until every rank has made it; then all get the element-wise sum (or maximum).
class SKEIN_EXPORT ThreadRanks {
 public:
  explicit ThreadRanks(int world) : world_(world) {}
  void reduce(std::vector<double>& values, bool max);
  int world() const { return world_; }

 private:
  int world_;
  std::mutex mutex_;
  std::condition_variable done_;
  int arrived_ = 0;
  long round_ = 0;
  std::vector<double> acc_, result_;
};

// A parallel wrapper with collectives only: one rank alone, or one rank of ThreadRanks.
class SKEIN_EXPORT FakeParallel final : public Parallel {
 public:
  explicit FakeParallel(ThreadRanks* ranks = nullptr) : ranks_(ranks) {}
  void prepare(torch::nn::Module&) override {}
  void finish_gradients() override {}
  void all_reduce_sum(std::vector<double>& values) override;
  void all_reduce_max(std::vector<double>& values) override;
  void barrier() override;

 private:
  ThreadRanks* ranks_;
};

// What a FakeRun holds besides its run: the run (rank, world size, run
// directory) is the harness's, the one its plugins were created with.
struct FakeRunOptions {
  ThreadRanks* ranks = nullptr;        // the harness's rank of these threads (world: the run's world_size)
  std::shared_ptr<Model> model;        // what ctx.model<T>() reaches; none: those calls throw
  double lr = 0.1;                     // ctx.optimizer(): an SGD over the model's parameters
  long batches_per_epoch = 1;
  // What ctx.config() returns; ctx.settings() is read from it, the keys it
  // lacks with the config's defaults (max_epochs 10, ...), which FakeRun
  // writes into the config it returns, so that the two agree.
  nlohmann::json config = nlohmann::json::object();
  std::string checkpoint_root = "/nonexistent";
};

// A checkpoint a callback asked for.
struct CheckpointRequest {
  std::string name;
  std::vector<std::string> remove_after;
  bool operator==(const CheckpointRequest& other) const {
    return name == other.name && remove_after == other.remove_after;
  }
};
inline std::ostream& operator<<(std::ostream& out, const CheckpointRequest& r) {
  out << r.name << " (removing";
  for (const auto& old : r.remove_after) out << ' ' << old;
  return out << ')';
}

class SKEIN_EXPORT FakeRun final : public TrainContext {
 public:
  // A run as `harness`'s plugins see it: run() is harness.run() as it is now
  // (set its rank and world_size before creating plugins and this). Throws
  // std::logic_error when options.ranks has another world size.
  explicit FakeRun(const Harness& harness, FakeRunOptions options = {});
  ~FakeRun() override;

  // TrainContext.
  const RunInfo& run() const override { return run_; }
  History& history() override { return history_; }
  Model& model_base() override;
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }
  Parallel& parallel() override { return parallel_; }
  long epoch() const override { return static_cast<long>(history_.size()); }
  void request_stop(const std::string& reason) override;
  bool stop_requested() const override { return !stop_reason.empty(); }
  std::ostream& log() override { return log_; }
  long batches_per_epoch() const override { return options_.batches_per_epoch; }
  const nlohmann::json& config() const override { return options_.config; }
  const RunSettings& settings() const override { return settings_; }
  void request_checkpoint(const std::string& name, const std::vector<std::string>& remove_after) override;
  std::string checkpoint_root() const override { return options_.checkpoint_root; }

  // An epoch as the trainer makes it: begin_epoch() starts it (its batch
  // records go into it); end_epoch() commits those records, as the trainer
  // does before on_epoch_end, and records `values` as epoch values.
  void begin_epoch();
  void end_epoch(const std::vector<std::pair<std::string, double>>& values = {});
  // begin_epoch(), then end_epoch(values).
  void add_epoch(const std::vector<std::pair<std::string, double>>& values = {});
  // add_epoch({{key, value}}).
  void epoch_with(const std::string& key, double value) { add_epoch({{key, value}}); }
  // Runs `callback` over one epoch per value of `key` (add_epoch, then
  // on_epoch_end) until it asks to stop; returns that epoch (0: never).
  long stop_epoch(Callback& callback, const std::string& key, const std::vector<double>& values);
  // One train batch of the open epoch through `callback`, its hooks as the
  // trainer runs them around its step: a new batch record (train_loss from
  // `loss` when given, train_batch_size), on_batch_begin, on_batch_end.
  // Nothing is computed: a test that needs the step itself (forward,
  // backward, on_grad_computed, the optimizer) runs the engine's own,
  // EngineRun's RankEngine::train_step. Returns the batch (loss set); it
  // refers to `inputs` and `targets`.
  Batch train_batch(Callback& callback, const torch::Tensor& inputs, const torch::Tensor& targets,
                    const torch::Tensor& loss = {});

  // What callbacks asked for and wrote.
  std::string stop_reason;  // the first reason asked
  std::vector<CheckpointRequest> checkpoints;
  std::string log_text() const { return log_.str(); }

 private:
  RunInfo run_;
  FakeRunOptions options_;
  RunSettings settings_;
  History history_;
  FakeParallel parallel_;
  torch::Tensor unused_weight_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::ostringstream log_;
  long batch_index_ = 0;
};

// --- The real engine ---------------------------------------------------

// A run of the real engine -- the Trainer `skein train` and sessions run --
// with `world_size` ranks as threads of this test, sharing a c10d FileStore
// in a temporary folder (the run's store, as under skein's launcher), so that
// plugins that talk across ranks (history backends, parallel wrappers) test
// themselves as they run, and every callback hook runs as in a real run
// (EpochScorer, EpochReporter and TestReporter ones included). Each rank is
// given once: RankEngine::context().run() is what its plugins were made with.
// libtorch's process-wide state is shared by the threads: the global random
// generator (ranks' draws interleave) and its thread pools.
struct EngineRunOptions {
  // A run config as in a config file: {"model": ..., "data": ..., "callbacks": [...]}.
  nlohmann::json config;
  int world_size = 1;
  // Plugin libraries and folders besides the default ones (HarnessOptions).
  std::vector<std::string> plugin_paths;
  // Bounds every store wait and collective, so a rank left waiting fails.
  double timeout_s = 60;
};

// A small complete run config for EngineRun: the bundled mlp on the
// synthetic dataset (64 samples of 4 features, 3 classes, a quarter held out
// for validation), cross entropy, SGD, batches of 8, 2 epochs, seed 1. A test
// changes what it tests: config["history"] = {{"plugin", "mine"}}.
SKEIN_EXPORT nlohmann::json small_run_config();

// small_run_config() with the config slot `slot` ("history", "parallel",
// ...) set to `plugin` ({"plugin": name, its options...}), on `world_size` ranks.
SKEIN_EXPORT EngineRunOptions small_run(const std::string& slot, const nlohmann::json& plugin, int world_size = 1);

// One rank's engine: the step API `skein::Session` drives, on this rank's thread.
class SKEIN_EXPORT RankEngine {
 public:
  ~RankEngine();
  RankEngine(const RankEngine&) = delete;
  RankEngine& operator=(const RankEngine&) = delete;
  // What this rank's callbacks see (its run, history, model, ...).
  TrainContext& context();
  // Every epoch of the config's dataset (as skein train): the epochs run.
  long fit();
  // A train step of the test's own batch (the epoch opens with the first).
  void train_step(const torch::Tensor& inputs, const torch::Tensor& targets);
  // An evaluation batch recorded as valid_* values.
  void eval_step(const torch::Tensor& inputs, const torch::Tensor& targets);
  // Closes the epoch (a collective: history sync, on_epoch_end, the agreed
  // stop, requested checkpoints); returns whether the run stops.
  bool end_epoch();
  // on_train_end of every callback, the history backend's close.
  void end_training();
  // Writes a checkpoint to `dir` (a collective), or restores one.
  void save_checkpoint(const std::string& dir);
  void resume(const std::string& dir);

 private:
  friend class EngineRun;
  struct Impl;
  explicit RankEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class SKEIN_EXPORT EngineRun {
 public:
  // Makes every rank's engine, each on its own thread (process groups
  // rendezvous); a bad config throws ConfigError as skein train reports it.
  explicit EngineRun(EngineRunOptions options);
  ~EngineRun();
  EngineRun(const EngineRun&) = delete;
  EngineRun& operator=(const EngineRun&) = delete;

  int world_size() const;
  RankEngine& rank(int r);
  // The run directory every rank shares (rank 0 writes history.json, checkpoints, ...).
  const std::string& run_dir() const;
  // Runs body(rank r's engine) for every rank at once, each on its own
  // thread; when ranks throw, rethrows the lowest rank's exception after all ended.
  void each_rank(const std::function<void(RankEngine&)>& body);
  // each_rank(fit): the epochs each rank ran.
  std::vector<long> fit();
  // Rank 0's log (the epoch table and what plugins write to ctx.log()).
  std::string log_text() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What a history backend that synchronizes ranks guarantees, after an
// EngineRun's epochs: every rank's history is rank 0's, and each epoch holds
// the batch records of all ranks. "" when it holds; else what differs.
SKEIN_EXPORT std::string history_sync_problem(EngineRun& run);

// --- What every plugin of a kind must do ---------------------------------
// Each returns "" when the plugin does it, else one line saying what failed.

// A model: outputs [N, info.num_classes] for N samples of info.input_shape
// (N = 1 and 3), has parameters that train, and after torch::save and
// torch::load into a second instance (as checkpoints do) gives the same
// outputs in eval mode.
SKEIN_EXPORT std::string model_problem(Harness& harness, const std::string& name, const nlohmann::json& options,
                                       const DataInfo& info);
// An optimizer: over a small model, 30 steps lower a least-squares loss; its
// parameter groups expose the learning rate the trainer checks and
// checkpoints; its state saved after 5 steps and loaded into a fresh one
// continues exactly as the original does; when it declares itself
// elementwise (skein::ElementwiseOptimizer), stepping a parameter in pieces
// does what stepping it whole does.
SKEIN_EXPORT std::string optimizer_problem(Harness& harness, const std::string& name,
                                           const nlohmann::json& options);

// A loss: takes targets of its kind (class ids [N] for a classification
// loss, else values [N, info.num_classes]) for outputs [N, info.num_classes],
// computes a finite scalar with a gradient for the outputs, and a small step
// of the outputs against that gradient lowers it.
SKEIN_EXPORT std::string loss_problem(Harness& harness, const std::string& name, const nlohmann::json& options,
                                      const DataInfo& info);

// A Boost.Test (or any) fixture for callback tests:
//   BOOST_FIXTURE_TEST_SUITE(my_callback, skein::testing::CallbackFixture)
//   ... auto cb = make("my_callback", {{"patience", 2}}); FakeRun run(harness); ...
struct CallbackFixture {
  Harness harness;
  std::shared_ptr<Callback> make(const std::string& name, const nlohmann::json& options = nlohmann::json::object()) {
    return harness.create<Callback>(name, options);
  }
};

// Whether `part` occurs in `text` (messages, logs).
inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The message of the `E` (a std::exception) that `fn` throws; "" when it
// throws none. Other exceptions pass through (and fail a Boost test).
template <class E = std::exception, class Fn>
std::string message_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace skein::testing
