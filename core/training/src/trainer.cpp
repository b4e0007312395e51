#include "skein/core/trainer.hpp"

#include <chrono>
#include <deque>
#include <functional>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <boost/filesystem.hpp>
#include <torch/data/samplers/distributed.h>
#include <torch/utils.h>

#include <boost/asio/thread_pool.hpp>

#include "skein/core/allocator.hpp"
#include "skein/core/checkpoint_dir.hpp"
#include "skein/core/crash_report.hpp"
#include "skein/core/interrupt.hpp"
#include "skein/core/mixed_precision.hpp"
#include "skein/core/model_io.hpp"
#include "skein/core/warm_start.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/kit/datasets.hpp"
#include "skein/kit/losses.hpp"
#include "skein/run.hpp"
#include "skein/errors.hpp"

namespace skein::core {

namespace {

// A whole split from Dataset::train() or test(): inputs and targets of one length.
void check_split(const TensorSplit& s, const std::string& what) {
  if (!s.inputs.defined() || !s.targets.defined())
    throw std::runtime_error("dataset: " + what + " split is empty");
  if (s.inputs.dim() == 0 || s.targets.dim() == 0 || s.inputs.size(0) != s.targets.size(0))
    throw std::runtime_error("dataset: " + what + " split has " +
                             std::to_string(s.inputs.dim() ? s.inputs.size(0) : 0) + " inputs but " +
                             std::to_string(s.targets.dim() ? s.targets.size(0) : 0) + " targets");
}

// Class counts inferred as max label + 1 grow with one stray label (a 57 among
// 0..9): most classes would then have no sample, silently. Refused.
void check_classes_present(const torch::Tensor& targets, const DataInfo& info, const std::string& where) {
  // Only where every real class would show up: ten samples a class at least.
  if (info.num_classes <= 2 || targets.scalar_type() != torch::kLong || targets.dim() != 1 ||
      targets.size(0) < 10 * info.num_classes)
    return;
  const auto counts = torch::bincount(targets.clamp(0, info.num_classes - 1), {}, info.num_classes);
  const auto empty = counts.eq(0).sum().item<std::int64_t>();
  if (empty * 2 > info.num_classes)
    throw std::runtime_error(where + ": " + std::to_string(empty) + " of " +
                             std::to_string(info.num_classes) + " classes have no training sample (largest label " +
                             std::to_string(targets.max().item<std::int64_t>()) +
                             "): a stray label? Fix the labels, or set the class count explicitly");
}

// A classifier must score every class the data has: a narrower output makes
// some labels out of range, a wider one silently trains classes that never occur.
void check_class_scores(const torch::Tensor& outputs, const torch::Tensor& targets, const DataInfo& info,
                        const std::string& model) {
  if (outputs.dim() != 2 || info.num_classes <= 0 || outputs.size(1) == info.num_classes) return;
  std::string message = "model '" + model + "' outputs " + std::to_string(outputs.size(1)) +
                        " class scores per sample, but the dataset has " + std::to_string(info.num_classes) +
                        " classes";
  // Labels 1..C count as C + 1 classes (0..C) when the count is inferred: the
  // batch's smallest label tells (looked at only on this failing path).
  const bool starts_at_one = targets.scalar_type() == torch::kLong && targets.numel() > 0 &&
                             targets.min().item<std::int64_t>() == 1;
  if (starts_at_one && outputs.size(1) == info.num_classes - 1)
    message += " (0 to " + std::to_string(info.num_classes - 1) + "): the labels start at 1; shift them to 0.." +
               std::to_string(info.num_classes - 2) + ", or give the model " + std::to_string(info.num_classes) +
               " outputs";
  throw ConfigError(message);
}

// Runs `step`, code of the plugin `use`: an error about one of its options
// (OptionError) is located in the config at the plugin's path + the option,
// so that blame() names the file or --set flag that gave the value.
template <class Step>
auto located(const PluginUse& use, Step&& step) -> decltype(step()) {
  try {
    return step();
  } catch (const OptionError& e) {
    throw ConfigPathError(use.path + "." + e.option(), e.what());
  }
}

// The plugin `use` names, made with its options (kept in `kept`, alive as
// long as the trainer, for a plugin that holds on to them); an option error
// of its constructor is located in the config (located()).
template <class T>
std::shared_ptr<T> make_plugin(const PluginRegistry& registry, const PluginUse& use, std::deque<Options>& kept,
                               const RunInfo& run, const RunStore* store, const DataInfo* data = nullptr) {
  const Options& options = kept.emplace_back(use.make_options());
  return located(use, [&] { return registry.create<T>(*use.record, PluginArgs{options, run, data, store}); });
}

}  // namespace

// The dataset's splits: train (less the validation rows, unless the dataset
// has validation data of its own), valid and test, their targets checked when
// held in memory; the fetch pool when a split is not.
void Trainer::open_splits() {
  const std::string data_where = "data (plugin '" + config_.data.record->name + "')";  // in errors
  std::shared_ptr<const SampleSource> train_source, valid_source, test_source;
  auto* own_valid = dynamic_cast<OwnValidation*>(data_.get());
  auto from_data = [&](auto&& read) { return located(config_.data, read); };  // the dataset's code runs
  if (auto* streaming = dynamic_cast<StreamingDataset*>(data_.get())) {
    train_source = from_data([&] { return streaming->train_source(); });
    test_source = from_data([&] { return streaming->test_source(); });
    if (own_valid) valid_source = from_data([&] { return own_valid->valid_source(); });
  } else {
    TensorSplit whole = from_data([&] { return data_->train(); });
    check_split(whole, "train");
    train_source = memory_source(std::move(whole));
    if (auto t = from_data([&] { return data_->test(); })) {
      check_split(*t, "test");
      test_source = memory_source(std::move(*t));
    }
    if (auto v = own_valid ? from_data([&] { return own_valid->valid(); }) : std::nullopt) {
      check_split(*v, "valid");
      valid_source = memory_source(std::move(*v));
    }
  }
  // Targets held in memory are checked now; the others as their batches arrive.
  const DataSplit all(train_source);
  if (const torch::Tensor targets = train_source->targets_in_memory(); targets.defined()) {
    loss_->check_targets(targets, data_info_, "train");
    if (loss_->classification()) check_classes_present(targets, data_info_, data_where);
  }
  // Samples shaped unlike training ones would be scored wrongly: one sample tells.
  // `split` as targets are named ("valid"), `name` as messages say it ("validation").
  auto check_held_out = [&](const SampleSource& source, const char* split, const char* name) {
    if (const torch::Tensor targets = source.targets_in_memory(); targets.defined())
      loss_->check_targets(targets, data_info_, split);
    if (source.size() > 0) check_held_out_shape(data_info_, source.fetch({0}, FetchOptions{}).inputs, data_where, name);
  };
  if (test_source) {
    check_held_out(*test_source, "test", "test");
    test_ = DataSplit(test_source);
  }
  if (valid_source) {
    check_held_out(*valid_source, "valid", "validation");
    train_ = all;
    valid_ = DataSplit(valid_source);
  } else if (config_.valid_stratified) {
    const torch::Tensor targets = train_source->targets_in_memory();
    if (!targets.defined() || targets.scalar_type() != torch::kLong || targets.dim() != 1)
      throw ConfigError("valid_stratified: needs class ids [N] held in memory; " + data_where +
                        (targets.defined() ? " has targets of another kind" : " streams its samples"));
    std::tie(train_, valid_) = all.split_off_stratified(config_.valid_split, config_.seed, targets);
  } else {
    std::tie(train_, valid_) = all.split_off(config_.valid_split, config_.seed);
  }
  // Batches of a split not in memory are fetched ahead, on worker threads.
  const bool all_in_memory = all.in_memory() && (!test_ || test_->in_memory()) &&
                             (valid_.size() == 0 || valid_.in_memory());
  if (config_.data_workers > 0 && !all_in_memory)
    pool_ = std::make_unique<boost::asio::thread_pool>(config_.data_workers);
  if (train_.size() < run_.world_size)
    throw ConfigError("data: " + std::to_string(train_.size()) + " training samples cannot feed " +
                      std::to_string(run_.world_size) + " ranks");
  // Every rank reads the whole training split: the same scaling everywhere.
  if (config_.standardize) input_scaling_ = InputScaling::of(train_, data_info_.input_shape);
}

Trainer::Trainer(const RunConfig& config, const PluginRegistry& registry, RunInfo run,
                 std::ostream& log, const RunStore* store)
    : config_(config), run_(std::move(run)), log_(log), store_(store) {
  tune_allocator_for_training();  // for every program that trains through a Trainer (once per process)
  run_.seed = config_.seed;
  torch::manual_seed(config_.seed);

  loss_ = make_plugin<Loss>(registry, config_.loss, plugin_options_, run_, store_);

  if (config_.data.record) {
    data_ = make_plugin<Dataset>(registry, config_.data, plugin_options_, run_, store_);
    data_info_ = located(config_.data, [&] { return data_->info(); });
    open_splits();
  } else {
    // A session fed by its program: the config's data_info sizes the model.
    data_info_ = config_.data_info;
    if (config_.standardize)
      throw ConfigError("standardize: needs the config's data (its training split gives the mean and std)");
  }

  // Model initialisation depends on the seed alone, not on what the dataset drew.
  torch::manual_seed(config_.seed);
  model_ = make_plugin<Model>(registry, config_.model, plugin_options_, run_, store_, &data_info_);
  // Every rank reads the same file; ddp's broadcast then changes nothing.
  if (!config_.init_from.empty()) {
    const WarmStartReport report = warm_start(*model_, {config_.init_from, config_.init_strict});
    for (const auto& note : report.notes) log_ << note << "\n";
    if (!report.skipped.empty() && run_.is_main()) warn(report.skipped);
  }

  parallel_ = make_plugin<Parallel>(registry, config_.parallel, plugin_options_, run_, store_);
  located(config_.parallel, [&] { parallel_->prepare(*model_); });
  optimizer_factory_ = make_plugin<OptimizerFactory>(registry, config_.optimizer, plugin_options_, run_, store_);
  optimizer_ = located(config_.optimizer, [&] { return optimizer_factory_->create(model_->parameters()); });

  backend_ = make_plugin<HistoryBackend>(registry, config_.history, plugin_options_, run_, store_);
  // Asked of the backend, not of its name: a third-party backend may sync too.
  if (run_.world_size > 1 && run_.is_main() && !backend_->synchronizes_ranks())
    skein::warn("history '" + config_.history.record->name +
                "' keeps each rank's own batches, so ranks may decide differently; choose a history backend "
                "that synchronizes ranks ('skein plugins' lists the history plugins)");
  for (const auto& use : config_.callbacks)
    callbacks_.push_back(make_plugin<Callback>(registry, use, plugin_options_, run_, store_));

  // Every rank gets ceil(n / world) samples (the sampler pads), so all ranks
  // run the same number of batches and gradient-sync steps.
  if (data_) {
    const auto per_rank = (train_.size() + run_.world_size - 1) / run_.world_size;
    batches_per_epoch_ = static_cast<long>((per_rank + config_.batch_size - 1) / config_.batch_size);
  }

  intern_batch_keys();
}

void Trainer::intern_batch_keys() {
  auto& b = history_.batches();
  k_train_loss_ = b.key(history_key::kTrainLoss);
  k_train_size_ = b.key(history_key::kTrainBatchSize);
  k_valid_loss_ = b.key(history_key::kValidLoss);
  k_valid_acc_ = b.key(history_key::kValidAcc);
  k_valid_size_ = b.key(history_key::kValidBatchSize);
  k_metrics_.clear();
}

void Trainer::each_callback(const char* hook, const std::function<void(Callback&)>& call) {
  for (std::size_t i = 0; i < callbacks_.size(); ++i) {
    const std::string& name = config_.callbacks[i].record->name;
    PluginScope scope(name.c_str(), hook);
    try {
      call(*callbacks_[i]);
    } catch (const std::exception&) {
      throw;  // callbacks' own messages say what went wrong; tests and users rely on them
    } catch (...) {
      throw std::runtime_error("callback '" + name + "' threw a non-standard exception in " + hook);
    }
  }
}

torch::Tensor Trainer::compute_loss(Batch& batch) {
  const MixedPrecisionScope autocast(config_.bf16_mixed);
  {
    PluginScope scope(config_.model.record->name.c_str(), "model forward");
    try {
      batch.outputs = model_->forward(input_scaling_.apply(batch.inputs));
      // Autocast's bfloat16 outputs: the loss, metrics and callbacks get
      // float32, as the loss would compute in float32 anyway.
      if (batch.outputs.scalar_type() == torch::kBFloat16) batch.outputs = batch.outputs.to(torch::kFloat32);
    } catch (const ConfigError&) {
      throw;
    } catch (const std::exception& e) {
      // One line that names the model, the inputs and the cause (a TorchScript
      // error's first lines are only a header); the whole message to the log.
      const std::string what = e.what();
      if (what.find('\n') != std::string::npos) log_ << "\nThe model's forward failed:\n" << what << "\n";
      std::ostringstream line;
      line << "model '" << config_.model.record->name << "' failed on inputs of shape " << batch.inputs.sizes()
           << ": " << first_line(what);
      throw std::runtime_error(line.str());
    }
  }
  if (!outputs_checked_) {
    if (loss_->classification())
      check_class_scores(batch.outputs, batch.targets, data_info_, config_.model.record->name);
    outputs_checked_ = true;
  }
  PluginScope scope(config_.loss.record->name.c_str(), "loss compute");
  return loss_->compute(batch.outputs, batch.targets);
}

void Trainer::record_loss_metrics(const Batch& batch, const char* phase) {
  auto& log = history_.batches();
  for (const auto& m : loss_->metrics(batch.outputs.detach(), batch.targets)) {
    const std::string key = std::string(phase) + "_" + m.name;
    auto it = k_metrics_.find(key);
    if (it == k_metrics_.end()) it = k_metrics_.emplace(key, log.key(key)).first;
    log.put(it->second, m.value);
  }
}

Trainer::~Trainer() = default;

Prefetcher::Options Trainer::prefetch_options(bool augment, std::uint64_t salt) const {
  Prefetcher::Options o;
  o.fetch.augment = augment;
  // Per epoch, rank and phase: the same on a resumed run.
  o.fetch.seed = config_.seed * 1000003u + static_cast<std::uint64_t>(epoch_) * 7919u +
                 static_cast<std::uint64_t>(run_.rank) * 104729u + salt;
  o.pool = pool_.get();
  o.depth = 2 * static_cast<std::size_t>(config_.data_workers);
  return o;
}

void Trainer::train_epoch() {
  model_->train();
  const auto n = static_cast<std::size_t>(train_.size());
  const auto batch_size = static_cast<std::size_t>(config_.batch_size);
  // The epoch's permutation depends on the seed and the epoch alone, so a
  // resumed epoch draws the same one and continues at its next batch.
  torch::data::samplers::DistributedRandomSampler sampler(n, run_.world_size, run_.rank);
  sampler.set_epoch(config_.seed + static_cast<std::uint64_t>(epoch_));
  sampler.reset();
  std::vector<std::vector<std::int64_t>> batches;
  while (auto indices = sampler.next(batch_size)) batches.emplace_back(indices->begin(), indices->end());
  Prefetcher::Options fetch = prefetch_options(true, 1);
  fetch.first = static_cast<std::size_t>(epoch_batches_);
  Prefetcher data(train_, std::move(batches), fetch);
  long index = epoch_batches_;
  while (auto fetched = data.next()) {
    check_interrupt(index, "batch");
    if (!train_.in_memory()) loss_->check_targets(fetched->targets, data_info_, "train");
    Batch batch{fetched->inputs, fetched->targets};
    batch.index = index++;
    train_batch(batch);
    // Checkpoints asked for inside the epoch (every_n_steps) are written
    // where an optimizer step has just been taken: no gradient is pending.
    if (batch.optimizer_step && !pending_checkpoints_.empty()) write_pending_checkpoints();
  }
}

void Trainer::train_batch(Batch& batch) {
  // Micro-batches of one optimizer step: [group_start, group_start + group);
  // the epoch's last group is shorter when the batch count is known.
  const long index = batch.index;
  const long accumulate = config_.accumulate_steps;
  const long group_start = index - index % accumulate;
  const long group = batches_per_epoch_ > 0 ? std::min(accumulate, batches_per_epoch_ - group_start) : accumulate;
  const bool step_now = index + 1 >= group_start + group;
  batch.optimizer_step = step_now;
  batch.training = true;
  if (!model_->is_training()) model_->train();  // after an eval_batch
  if (!first_batch_at_) first_batch_at_ = std::chrono::steady_clock::now();
  auto& log = history_.batches();
  log.new_row();  // callbacks may add their own values to this batch's record
  each_callback("on_batch_begin", [&](Callback& cb) { cb.on_batch_begin(*this, batch); });

  if (index == group_start) optimizer_->zero_grad();
  batch.loss = compute_loss(batch);
  parallel_->set_gradient_sync(step_now);
  (group > 1 ? batch.loss / static_cast<double>(group) : batch.loss).backward();
  if (step_now) parallel_->finish_gradients();
  each_callback("on_grad_computed", [&](Callback& cb) { cb.on_grad_computed(*this, batch); });
  if (step_now) optimizer_->step();

  log.put(k_train_loss_, batch.loss.item<double>());
  log.put(k_train_size_, static_cast<double>(batch.inputs.size(0)));
  record_loss_metrics(batch, "train");
  each_callback("on_batch_end", [&](Callback& cb) { cb.on_batch_end(*this, batch); });
  ++batches_done_;
  epoch_batches_ = index + 1;
}

EvalResult Trainer::evaluate(const DataSplit& split, bool record) {
  torch::NoGradGuard no_grad;
  model_->eval();
  // Every sample exactly once over all ranks: contiguous shards, no padding.
  const std::int64_t n = split.size();
  const std::int64_t begin = n * run_.rank / run_.world_size;
  const std::int64_t end = n * (run_.rank + 1) / run_.world_size;
  std::vector<std::vector<std::int64_t>> batches;
  for (std::int64_t lo = begin; lo < end; lo += config_.batch_size) {
    batches.emplace_back();
    for (std::int64_t i = lo; i < std::min(end, lo + config_.batch_size); ++i) batches.back().push_back(i);
  }
  Prefetcher data(split, std::move(batches), prefetch_options(false, record ? 2 : 3));
  EvalSums sums;
  sums.unrecorded = !record;
  long index = 0;
  while (auto fetched = data.next()) {
    check_interrupt(index, record ? "validation batch" : "test batch");
    if (!split.in_memory()) loss_->check_targets(fetched->targets, data_info_, record ? "valid" : "test");
    Batch batch{fetched->inputs, fetched->targets};
    batch.index = index++;
    eval_batch(batch, record, sums);
  }
  return reduce_eval(sums);
}

void Trainer::eval_batch(Batch& batch, bool record, EvalSums& sums) {
  torch::NoGradGuard no_grad;
  if (model_->is_training()) model_->eval();
  batch.training = false;
  auto& log = history_.batches();
  if (record) {
    log.new_row();
    each_callback("on_batch_begin", [&](Callback& cb) { cb.on_batch_begin(*this, batch); });
  }
  batch.loss = compute_loss(batch);
  const double loss = batch.loss.item<double>();
  const bool classify = loss_->classification();
  const auto correct = classify ? batch.outputs.argmax(1).eq(class_ids_of(batch.targets)).sum().item<std::int64_t>() : 0;
  const auto size = static_cast<double>(batch.inputs.size(0));
  sums.values[0] += loss * size;
  sums.values[1] += static_cast<double>(correct);
  sums.values[2] += size;
  ++sums.batches;
  if (!record) {  // the test split: the loss's values too, as validation records them
    for (const auto& m : loss_->metrics(batch.outputs, batch.targets)) sums.metrics[m.name] += m.value * size;
    if (classify) add_confusion(sums, batch);
  } else {
    log.put(k_valid_loss_, loss);
    if (classify) log.put(k_valid_acc_, static_cast<double>(correct) / size);
    log.put(k_valid_size_, size);
    record_loss_metrics(batch, "valid");
    each_callback("on_batch_end", [&](Callback& cb) { cb.on_batch_end(*this, batch); });
  }
}

// Counts of (true class, predicted class) pairs of a classification batch.
void Trainer::add_confusion(EvalSums& sums, const Batch& batch) {
  const std::int64_t classes = batch.outputs.size(1);
  const auto pairs = class_ids_of(batch.targets).to(torch::kInt64) * classes + batch.outputs.argmax(1);
  const auto counts = torch::bincount(pairs, {}, classes * classes).reshape({-1, classes});
  if (!sums.confusion.defined()) {
    sums.confusion = counts;
  } else if (counts.size(0) == sums.confusion.size(0)) {
    sums.confusion += counts;
  }
}

// The confusion counts of all ranks (a collective: every rank calls it).
std::vector<std::vector<std::int64_t>> Trainer::reduce_confusion(const torch::Tensor& local) {
  std::vector<double> size{local.defined() ? static_cast<double>(local.size(0)) : 0.0};
  parallel_->all_reduce_max(size);
  const auto classes = static_cast<std::int64_t>(size[0]);
  std::vector<double> flat(static_cast<std::size_t>(classes * classes), 0.0);
  if (local.defined() && local.size(0) == classes) {
    const auto d = local.to(torch::kFloat64).contiguous();
    std::copy(d.data_ptr<double>(), d.data_ptr<double>() + d.numel(), flat.begin());
  }
  parallel_->all_reduce_sum(flat);
  std::vector<std::vector<std::int64_t>> matrix(static_cast<std::size_t>(classes));
  for (std::int64_t t = 0; t < classes; ++t)
    for (std::int64_t p = 0; p < classes; ++p)
      matrix[static_cast<std::size_t>(t)].push_back(static_cast<std::int64_t>(flat[static_cast<std::size_t>(t * classes + p)]));
  return matrix;
}

EvalResult Trainer::reduce_eval(EvalSums sums) {
  auto& values = sums.values;
  // The loss's values are summed over ranks by name: only when every rank
  // evaluated a batch, so that all hold the same names (a collective either way).
  values.push_back(sums.batches == 0 ? 1.0 : 0.0);
  parallel_->all_reduce_sum(values);
  const bool every_rank_has_metrics = values.back() == 0.0;
  values.pop_back();
  EvalResult r;
  r.samples = static_cast<std::int64_t>(values[2]);
  if (r.samples > 0) {
    r.loss = values[0] / values[2];
    if (loss_->classification()) r.accuracy = values[1] / values[2];
  }
  if (every_rank_has_metrics && !sums.metrics.empty() && r.samples > 0) {
    std::vector<double> metric_sums;
    for (const auto& [name, sum] : sums.metrics) metric_sums.push_back(sum);
    parallel_->all_reduce_sum(metric_sums);
    std::size_t i = 0;
    for (const auto& [name, sum] : sums.metrics) {
      const double mean = metric_sums[i++] / values[2];
      if (name == "acc") {
        if (!r.accuracy) r.accuracy = mean;  // bce_with_logits: accuracy from the loss's own count
      } else {
        r.metrics[name] = mean;
      }
    }
  }
  if (sums.unrecorded && loss_->classification()) r.confusion = reduce_confusion(sums.confusion);
  return r;
}

// Epoch-level values from the (merged) batch records: for each phase, every
// key is averaged weighted by the batch sizes, so the result is the mean over
// all samples of all ranks. Then "<key>_best" marks a new best value.
void Trainer::summarize_epoch(double seconds) {
  const nlohmann::json& epoch = history_.last();
  std::map<std::string, std::pair<double, double>> sums;  // key -> (sum v*n, sum n)
  for (const auto& row : epoch.at(history_key::kBatches)) {
    for (const char* phase : {"train", "valid"}) {
      auto size_it = row.find(std::string(phase) + "_batch_size");
      if (size_it == row.end()) continue;
      const double n = size_it->get<double>();
      for (auto it = row.begin(); it != row.end(); ++it) {
        if (it.key().rfind(phase, 0) != 0 || it.key() == size_it.key()) continue;
        auto& s = sums[it.key()];
        s.first += it.value().get<double>() * n;
        s.second += n;
      }
    }
  }
  for (const auto& [key, s] : sums) {
    history_.record(key, s.first / s.second);
    mark_best(key);
  }
  history_.record(history_key::kDuration, seconds);
}

// "<key>_best": whether this epoch's value of `key` beats every earlier one.
void Trainer::mark_best(const std::string& key) {
  const double value = history_.last().at(key).get<double>();
  bool best = !std::isnan(value);
  for (std::size_t e = 0; best && e + 1 < history_.size(); ++e) {
    auto prev = history_.get(static_cast<long>(e), key);
    if (!prev.is_number()) continue;
    double p = prev.get<double>();
    best = lower_is_better(key) ? value < p : value > p;
  }
  history_.record(history_key::best_mark(key), best);
}

// Epoch scores (EpochScorer) get their "_best" marks as batch values do.
void Trainer::mark_best_of_epoch_scores() {
  std::vector<std::string> keys;
  const nlohmann::json& epoch = history_.last();
  for (auto it = epoch.begin(); it != epoch.end(); ++it) {
    const std::string& key = it.key();
    const bool phase = key.rfind("train_", 0) == 0 || key.rfind("valid_", 0) == 0;
    if (phase && !history_key::is_best_mark(key) && it.value().is_number() &&
        !epoch.contains(history_key::best_mark(key)))
      keys.push_back(key);
  }
  for (const auto& key : keys) mark_best(key);
}

bool Trainer::agree_on_stop() {
  std::vector<double> flag{stop_ ? 1.0 : 0.0};
  parallel_->all_reduce_sum(flag);
  if (flag[0] > 0 && !stop_) request_stop("stop requested by another rank");
  return flag[0] > 0;
}

void Trainer::request_stop(const std::string& reason) {
  if (!stop_) stop_reason_ = reason;
  stop_ = true;
}

namespace {

// A checkpoint is one directory right under checkpoint_root(); names starting
// with '.' are skein's own (half-written .tmp-*, replaced .old-*).
void check_checkpoint_name(const std::string& name, const char* what) {
  if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos || name.find('\0') != std::string::npos)
    throw ConfigError(std::string(what) + " '" + name +
                      "' is not a checkpoint name (one directory name, not starting with '.', no '/')");
}

}  // namespace

void Trainer::request_checkpoint(const std::string& name,
                                 const std::vector<std::string>& remove_after) {
  check_checkpoint_name(name, "request_checkpoint: checkpoint");
  for (const auto& old : remove_after) check_checkpoint_name(old, "request_checkpoint: remove_after");
  pending_checkpoints_.push_back({name, remove_after});
}

void Trainer::write_pending_checkpoints() {
  // Writing is a collective: every rank must ask for the same checkpoints
  // (they do when they decide from a synced history).
  if (run_.world_size > 1) {
    std::string names;
    for (const auto& r : pending_checkpoints_) names += r.name + ";";
    std::vector<double> h{static_cast<double>(std::hash<std::string>{}(names) % 1000003)};
    std::vector<double> h_max = h;
    parallel_->all_reduce_sum(h);
    parallel_->all_reduce_max(h_max);
    if (h[0] != h_max[0] * run_.world_size)
      throw std::runtime_error("ranks asked for different checkpoints at epoch " + std::to_string(epoch_) +
                               " (rank " + std::to_string(run_.rank) + ": '" + names +
                               "'); decide them from a synced history (tcpstore or filestore)");
  }
  std::string written;  // the first checkpoint of this epoch: later ones link its files
  for (const auto& request : pending_checkpoints_) {
    if (written.empty()) {
      write_checkpoint(request.name);
      written = request.name;
    } else if (run_.is_main()) {
      link_checkpoint(written, request.name);
    }
    if (run_.is_main()) {
      for (const auto& old : request.remove_after) {
        boost::system::error_code ec;
        boost::filesystem::remove_all(checkpoint_root() + "/" + old, ec);
      }
    }
  }
  if (!pending_checkpoints_.empty()) parallel_->barrier();
  pending_checkpoints_.clear();
}

// A callback (a schedule, say) may have driven a rate out of range: training
// on would only produce NaN. Every rank has the same rates, so all stop here.
void Trainer::check_learning_rates() {
  const auto& groups = optimizer_->param_groups();
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

long Trainer::fit() {
  try {
    return fit_epochs();
  } catch (const std::exception& e) {
    notify_failure(e.what());
    throw;
  } catch (...) {
    notify_failure("unknown failure");
    throw;
  }
}

void Trainer::notify_failure(const std::string& error) {
  const std::string line = skein::first_line(error);
  for (std::size_t i = 0; i < callbacks_.size(); ++i) {
    const std::string& name = config_.callbacks[i].record->name;
    PluginScope scope(name.c_str(), "on_exception");
    try {
      callbacks_[i]->on_exception(*this, line);
    } catch (const std::exception& e) {
      skein::warn("callback '" + name + "' failed in on_exception: " + skein::first_line(e.what()));
    } catch (...) {
      skein::warn("callback '" + name + "' failed in on_exception");
    }
  }
}

void Trainer::check_interrupt(long batch, const char* what) const {
  if (const int signal = pending_interrupt())
    throw Interrupted(signal, "interrupted by " + signal_text(signal) + " at epoch " + std::to_string(epoch_) + ", " +
                                  what + " " + std::to_string(batch + 1));
}

long Trainer::write_final_model() {
  const long epoch = epoch_open_ ? epoch_ - 1 : epoch_;
  if (!run_.is_main() || run_.run_dir.empty() || epoch <= 0) return 0;
  if (epoch_open_) {
    if (epoch_weights_.empty()) return 0;
    // The run is over: the model goes back to where the open epoch began.
    torch::NoGradGuard no_grad;
    std::size_t i = 0;
    for (auto& p : model_->parameters()) p.copy_(epoch_weights_[i++]);
    for (auto& b : model_->buffers()) b.copy_(epoch_weights_[i++]);
  }
  write_checkpoint_in(checkpoint_root(), kFinalModel, CheckpointParts{true, epoch});
  return epoch;
}

void Trainer::begin_training() {
  if (run_.is_main() && !run_.run_dir.empty()) remove_partial_checkpoints(checkpoint_root());
  each_callback("on_train_begin", [&](Callback& cb) { cb.on_train_begin(*this); });
}

void Trainer::begin_epoch() {
  if (keep_epoch_weights_) {
    torch::NoGradGuard no_grad;
    epoch_weights_.clear();
    for (const auto& p : model_->parameters()) epoch_weights_.push_back(p.detach().clone());
    for (const auto& b : model_->buffers()) epoch_weights_.push_back(b.detach().clone());
  }
  epoch_open_ = true;
  epoch_batches_ = 0;
  ++epoch_;
  epoch_started_ = std::chrono::steady_clock::now();
  history_.new_epoch();
  each_callback("on_epoch_begin", [&](Callback& cb) { cb.on_epoch_begin(*this); });
  check_learning_rates();
  model_->train();
}

namespace {

// Appends the rows of `from` to `to`, by key name: `to` keeps the ids its
// users interned.
void append_rows(BatchLog& to, const BatchLog& from) {
  std::vector<int> ids;
  for (const auto& key : from.keys()) ids.push_back(to.key(key));
  const auto& cells = from.cells();
  std::size_t c = 0;
  for (std::uint32_t row = 0; row < from.rows(); ++row) {
    to.new_row();
    for (; c < cells.size() && cells[c].row == row; ++c) to.put(ids[cells[c].key], cells[c].value);
  }
}

}  // namespace

void Trainer::reopen_epoch() {
  OpenEpoch open = std::move(*reopen_);
  reopen_.reset();
  epoch_weights_.clear();  // the weights the epoch began with are not in the checkpoint
  epoch_open_ = true;
  ++epoch_;
  epoch_batches_ = open.next_batch;
  epoch_started_ = std::chrono::steady_clock::now() -
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(open.seconds));
  history_.new_epoch();
  for (auto it = open.record.begin(); it != open.record.end(); ++it)
    if (it.key() != history_key::kEpoch) history_.record(it.key(), it.value());
  append_rows(history_.batches(), BatchLog::from_bytes(open.batches));
  check_learning_rates();
  model_->train();
}

bool Trainer::end_epoch() {
  backend_->sync_epoch(history_);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - epoch_started_;
  std::vector<double> seconds{took.count()};
  parallel_->all_reduce_max(seconds);  // the epoch lasts as long as its slowest rank
  summarize_epoch(seconds[0]);
  epoch_open_ = false;
  each_callback("on_epoch_scored", [&](Callback& cb) {
    if (auto* scorer = dynamic_cast<EpochScorer*>(&cb)) scorer->on_epoch_scored(*this);
  });
  mark_best_of_epoch_scores();
  each_callback("on_epoch_end", [&](Callback& cb) { cb.on_epoch_end(*this); });
  each_callback("on_epoch_recorded", [&](Callback& cb) {
    if (auto* reporter = dynamic_cast<EpochReporter*>(&cb)) reporter->on_epoch_recorded(*this);
  });
  if (run_.is_main() && !run_.run_dir.empty()) history_.save(run_files::path(run_.run_dir, run_files::kHistory));
  const bool stop = agree_on_stop();
  write_pending_checkpoints();
  if (epoch_recorded_) epoch_recorded_(epoch_);
  return stop;
}

void Trainer::end_training() {
  each_callback("on_train_end", [&](Callback& cb) { cb.on_train_end(*this); });
  backend_->close();
}

long Trainer::fit_epochs() {
  if (!data_) throw ConfigError("data: missing (the dataset plugin and its options: {\"plugin\": NAME, ...})");
  begin_training();
  epoch_ = start_epoch_ - 1;
  while (epoch_ < config_.max_epochs) {
    if (reopen_) {
      reopen_epoch();
    } else {
      begin_epoch();
    }
    train_epoch();
    if (valid_.size() > 0) evaluate(valid_, true);
    if (end_epoch()) break;
  }
  const long done = std::min<long>(epoch_, config_.max_epochs);
  end_training();
  return done;
}

torch::Tensor Trainer::predict(const torch::Tensor& inputs) {
  torch::NoGradGuard no_grad;
  model_->eval();
  PluginScope scope(config_.model.record->name.c_str(), "model forward");
  return model_->forward(input_scaling_.apply(inputs));
}

std::optional<EvalResult> Trainer::test() {
  if (!test_) return std::nullopt;
  return evaluate(*test_, false);
}

void Trainer::report_test(const nlohmann::json& results) {
  each_callback("on_test_end", [&](Callback& cb) {
    if (auto* reporter = dynamic_cast<TestReporter*>(&cb)) reporter->on_test_end(*this, results);
  });
}

}  // namespace skein::core
