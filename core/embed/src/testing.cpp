// The plugin test harness (core/embed/include/skein/testing.hpp) on the host's
// own plugin discovery and option validation: a plugin under test is created
// the way `skein train` creates it.
#include "skein/testing.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include <torch/nn/functional/loss.h>

#include "skein/host/config_keys.hpp"
#include "skein/host/option_limit_check.hpp"
#include "skein/host/option_schema.hpp"
#include "skein/host/plugin_registry.hpp"
#include "plugin_paths.hpp"
#include "skein/dataset.hpp"
#include "skein/errors.hpp"
#include "skein/history_backend.hpp"
#include "skein/loss.hpp"
#include "skein/optimizer.hpp"
#include "skein/options.hpp"

namespace fs = std::filesystem;

namespace skein::testing {

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "skein-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary folder: " + pattern);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

std::string TempDir::str(const std::string& child) const { return child.empty() ? path_ : path_ + "/" + child; }

namespace {
std::string write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
  return path;
}
}  // namespace

std::string TempDir::write(const std::string& name, const std::string& bytes) const {
  return write_bytes(str(name), bytes);
}

struct Harness::Impl {
  core::PluginRegistry registry;
  RunInfo run;
  std::string run_dir;
  std::optional<TempDir> own_run_dir;  // when no run_dir was given
  int callbacks = 0;  // created so far: the next one is callbacks[<this>]
  // Each plugin's Options outlive it (a plugin may keep a reference).
  std::vector<std::unique_ptr<Options>> options;
};

Harness::Harness(HarnessOptions options) : impl_(std::make_unique<Impl>()) {
  load_plugins(impl_->registry, options.plugin_paths);
  if (options.run_dir.empty()) options.run_dir = impl_->own_run_dir.emplace().str();
  impl_->run_dir = options.run_dir;
  impl_->run.run_dir = options.run_dir;
  impl_->run.run_id = "test";
}

Harness::~Harness() = default;

RunInfo& Harness::run() { return impl_->run; }
const RunInfo& Harness::run() const { return impl_->run; }
const std::string& Harness::run_dir() const { return impl_->run_dir; }

std::string Harness::write_file(const std::string& name, const std::string& bytes) const {
  return write_bytes(impl_->run_dir + "/" + name, bytes);
}

template <class I>
std::shared_ptr<I> Harness::create(const std::string& name, const nlohmann::json& options, const DataInfo* data) {
  const auto& record = impl_->registry.require(name);
  if (record.kind != kind_of<I>::value)
    throw ConfigError("plugin '" + name + "' is a " + to_string(record.kind) + " plugin, not a " +
                      to_string(kind_of<I>::value) + " plugin");
  // Named as in a config, so that errors read as `skein train` prints them:
  // "data (plugin 'csv'): option 'train': ...", "callbacks[1] (plugin ...".
  std::string slot = kind_of<I>::value == PluginKind::dataset ? run_key::kData : to_string(kind_of<I>::value);
  if (kind_of<I>::value == PluginKind::callback)
    slot = run_key::kCallbacks + ("[" + std::to_string(impl_->callbacks++) + "]");
  const std::string where = slot + " (plugin '" + name + "')";
  auto values = core::validate_options(record.options, options.is_null() ? nlohmann::json::object() : options,
                                       where, "");
  core::check_option_limits(record.options, values, where, "");
  impl_->options.push_back(std::make_unique<Options>(where, std::move(values)));
  return impl_->registry.create<I>(record, PluginArgs{*impl_->options.back(), impl_->run, data});
}

template SKEIN_EXPORT std::shared_ptr<Callback> Harness::create(const std::string&, const nlohmann::json&,
                                                               const DataInfo*);
template SKEIN_EXPORT std::shared_ptr<Dataset> Harness::create(const std::string&, const nlohmann::json&,
                                                              const DataInfo*);
template SKEIN_EXPORT std::shared_ptr<Model> Harness::create(const std::string&, const nlohmann::json&,
                                                            const DataInfo*);
template SKEIN_EXPORT std::shared_ptr<Loss> Harness::create(const std::string&, const nlohmann::json&,
                                                           const DataInfo*);
template SKEIN_EXPORT std::shared_ptr<OptimizerFactory> Harness::create(const std::string&, const nlohmann::json&,
                                                                       const DataInfo*);
template SKEIN_EXPORT std::shared_ptr<HistoryBackend> Harness::create(const std::string&, const nlohmann::json&,
                                                                     const DataInfo*);
template SKEIN_EXPORT std::shared_ptr<Parallel> Harness::create(const std::string&, const nlohmann::json&,
                                                               const DataInfo*);

void ThreadRanks::reduce(std::vector<double>& values, bool max) {
  std::unique_lock<std::mutex> lock(mutex_);
  const long round = round_;
  if (arrived_ == 0) {
    acc_ = values;
  } else {
    for (std::size_t i = 0; i < values.size(); ++i) acc_[i] = max ? std::max(acc_[i], values[i]) : acc_[i] + values[i];
  }
  if (++arrived_ == world_) {
    result_ = acc_;
    arrived_ = 0;
    ++round_;
    done_.notify_all();
  } else {
    done_.wait(lock, [&] { return round_ != round; });
  }
  values = result_;
}

void FakeParallel::all_reduce_sum(std::vector<double>& values) {
  if (ranks_) ranks_->reduce(values, false);
}
void FakeParallel::all_reduce_max(std::vector<double>& values) {
  if (ranks_) ranks_->reduce(values, true);
}
void FakeParallel::barrier() {
  std::vector<double> none;
  all_reduce_sum(none);
}

FakeRun::FakeRun(const Harness& harness, FakeRunOptions options)
    : run_(harness.run()), options_(std::move(options)), parallel_(options_.ranks) {
  if (options_.ranks && options_.ranks->world() != run_.world_size)
    throw std::logic_error("FakeRun: FakeRunOptions::ranks has " + std::to_string(options_.ranks->world()) +
                           " ranks, the harness's run " + std::to_string(run_.world_size) +
                           " (set harness.run().world_size)");
  settings_ = core::run_settings_of(options_.config);
  core::put_run_settings(options_.config, settings_);
  std::vector<torch::Tensor> params;
  if (options_.model) {
    params = options_.model->parameters();
  } else {
    unused_weight_ = torch::zeros({1}, torch::requires_grad());
    params = {unused_weight_};
  }
  optimizer_ = std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(options_.lr));
}

FakeRun::~FakeRun() = default;

Model& FakeRun::model_base() {
  if (!options_.model) throw std::logic_error("FakeRun: no model was given (FakeRunOptions::model)");
  return *options_.model;
}

void FakeRun::request_stop(const std::string& reason) {
  if (stop_reason.empty()) stop_reason = reason;
}

void FakeRun::request_checkpoint(const std::string& name, const std::vector<std::string>& remove_after) {
  checkpoints.push_back({name, remove_after});
}

void FakeRun::begin_epoch() {
  history_.new_epoch();
  batch_index_ = 0;
}

void FakeRun::end_epoch(const std::vector<std::pair<std::string, double>>& values) {
  history_.commit_batches();
  for (const auto& [key, value] : values) history_.record(key, value);
}

void FakeRun::add_epoch(const std::vector<std::pair<std::string, double>>& values) {
  begin_epoch();
  end_epoch(values);
}

long FakeRun::stop_epoch(Callback& callback, const std::string& key, const std::vector<double>& values) {
  for (double value : values) {
    epoch_with(key, value);
    callback.on_epoch_end(*this);
    if (stop_requested()) return epoch();
  }
  return 0;
}

Batch FakeRun::train_batch(Callback& callback, const torch::Tensor& inputs, const torch::Tensor& targets,
                           const torch::Tensor& loss) {
  Batch batch{inputs, targets};
  batch.index = batch_index_++;
  auto& records = history_.batches();
  records.new_row();  // the batch's record, as the trainer opens it
  callback.on_batch_begin(*this, batch);
  batch.loss = loss;
  if (batch.loss.defined()) records.put(records.key(history_key::kTrainLoss), batch.loss.item<double>());
  records.put(records.key(history_key::kTrainBatchSize), static_cast<double>(inputs.size(0)));
  callback.on_batch_end(*this, batch);
  return batch;
}

}  // namespace skein::testing
