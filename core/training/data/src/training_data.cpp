#include "skein/training/data/training_data.hpp"

#include <stdexcept>
#include <string>

#include <boost/asio/thread_pool.hpp>
#include <torch/data/samplers/distributed.h>

#include "skein/errors.hpp"
#include "skein/dataset.hpp"
#include "skein/training/data/data_scaling.hpp"
#include "skein/training/config/located.hpp"

namespace skein::core {

TrainingData::TrainingData() = default;
TrainingData::TrainingData(TrainingData&&) noexcept = default;
TrainingData& TrainingData::operator=(TrainingData&&) noexcept = default;
TrainingData::~TrainingData() = default;

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
    throw std::runtime_error(where + ": " + std::to_string(empty) + " of " + std::to_string(info.num_classes) +
                             " classes have no training sample (largest label " +
                             std::to_string(targets.max().item<std::int64_t>()) +
                             "): a stray label? Fix the labels, or set the class count explicitly");
}

struct Sources {
  std::shared_ptr<const SampleSource> train, valid, test;
};

// The dataset's sources: streamed, or whole splits held in memory.
Sources sources_of(const DataSource& source) {
  Sources s;
  auto* own_valid = dynamic_cast<OwnValidation*>(&source.data);
  auto from_data = [&](auto&& read) { return located(source.use, read); };  // the dataset's code runs
  if (auto* streaming = dynamic_cast<StreamingDataset*>(&source.data)) {
    s.train = from_data([&] { return streaming->train_source(); });
    s.test = from_data([&] { return streaming->test_source(); });
    if (own_valid) s.valid = from_data([&] { return own_valid->valid_source(); });
    return s;
  }
  TensorSplit whole = from_data([&] { return source.data.train(); });
  check_split(whole, "train");
  s.train = memory_source(std::move(whole));
  if (auto t = from_data([&] { return source.data.test(); })) {
    check_split(*t, "test");
    s.test = memory_source(std::move(*t));
  }
  if (auto v = own_valid ? from_data([&] { return own_valid->valid(); }) : std::nullopt) {
    check_split(*v, "valid");
    s.valid = memory_source(std::move(*v));
  }
  return s;
}

}  // namespace

TrainingData open_training_data(const DataSource& source, const RunConfig& config, const RunInfo& run) {
  const std::string data_where = "data (plugin '" + source.use.record->name + "')";  // in errors
  const Sources sources = sources_of(source);
  TrainingData d;
  // Targets held in memory are checked now; the others as their batches arrive.
  const DataSplit all(sources.train);
  if (const torch::Tensor targets = sources.train->targets_in_memory(); targets.defined()) {
    source.loss.check_targets(targets, source.info, "train");
    if (source.loss.classification()) check_classes_present(targets, source.info, data_where);
  }
  // Samples shaped unlike training ones would be scored wrongly: one sample tells.
  // `split` as targets are named ("valid"), `name` as messages say it ("validation").
  auto check_held_out = [&](const SampleSource& held_out, const char* split, const char* name) {
    if (const torch::Tensor targets = held_out.targets_in_memory(); targets.defined())
      source.loss.check_targets(targets, source.info, split);
    if (held_out.size() > 0)
      check_held_out_shape(source.info, held_out.fetch({0}, FetchOptions{}).inputs, data_where, name);
  };
  if (sources.test) {
    check_held_out(*sources.test, "test", "test");
    d.test = DataSplit(sources.test);
  }
  if (sources.valid) {
    check_held_out(*sources.valid, "valid", "validation");
    d.train = all;
    d.valid = DataSplit(sources.valid);
  } else if (config.valid_stratified) {
    const torch::Tensor targets = sources.train->targets_in_memory();
    if (!targets.defined() || targets.scalar_type() != torch::kLong || targets.dim() != 1)
      throw ConfigError("valid_stratified: needs class ids [N] held in memory; " + data_where +
                        (targets.defined() ? " has targets of another kind" : " streams its samples"));
    std::tie(d.train, d.valid) = all.split_off_stratified(config.valid_split, config.seed, targets);
  } else {
    std::tie(d.train, d.valid) = all.split_off(config.valid_split, config.seed);
  }
  // Batches of a split not in memory are fetched ahead, on worker threads.
  const bool all_in_memory =
      all.in_memory() && (!d.test || d.test->in_memory()) && (d.valid.size() == 0 || d.valid.in_memory());
  if (config.data_workers > 0 && !all_in_memory)
    d.pool = std::make_unique<boost::asio::thread_pool>(config.data_workers);
  if (d.train.size() < run.world_size)
    throw ConfigError("data: " + std::to_string(d.train.size()) + " training samples cannot feed " +
                      std::to_string(run.world_size) + " ranks");
  d.data_scaling = declared_data_scaling(source.data, source.info, data_where);
  // Every rank reads the whole training split: the same scaling everywhere.
  if (config.standardize) d.scaling = InputScaling::of(d.train, source.info.input_shape);
  return d;
}

long train_batches_per_epoch(std::int64_t samples, int world_size, std::int64_t batch_size) {
  const auto per_rank = (samples + world_size - 1) / world_size;
  return static_cast<long>((per_rank + batch_size - 1) / batch_size);
}

std::vector<std::vector<std::int64_t>> train_pass_batches(std::int64_t samples, const RunInfo& run,
                                                          std::int64_t batch_size, std::uint64_t seed, long epoch) {
  torch::data::samplers::DistributedRandomSampler sampler(static_cast<std::size_t>(samples), run.world_size,
                                                          run.rank);
  sampler.set_epoch(seed + static_cast<std::uint64_t>(epoch));
  sampler.reset();
  std::vector<std::vector<std::int64_t>> batches;
  while (auto indices = sampler.next(static_cast<std::size_t>(batch_size)))
    batches.emplace_back(indices->begin(), indices->end());
  return batches;
}

namespace {

// Rank `rank`'s contiguous share of `rows` over `world` ranks, in batches:
// ceil(rows / world) rows each, past the end taken again from the start.
std::vector<std::vector<std::int64_t>> shard_batches(const std::vector<std::int64_t>& rows, int world, int rank,
                                                     std::int64_t batch_size) {
  if (rows.empty()) return {};
  const auto ranks = static_cast<std::size_t>(world);
  const std::size_t per_rank = (rows.size() + ranks - 1) / ranks;
  const std::size_t begin = per_rank * static_cast<std::size_t>(rank);
  std::vector<std::vector<std::int64_t>> mine;
  for (std::size_t i = 0; i < per_rank; ++i) {
    if (i % static_cast<std::size_t>(batch_size) == 0) mine.emplace_back();
    mine.back().push_back(rows[(begin + i) % rows.size()]);
  }
  return mine;
}

}  // namespace

std::vector<std::int64_t> pass_rows_left(std::int64_t samples, std::int64_t batch_size, std::uint64_t seed, long epoch,
                                         const std::vector<PassSegment>& done) {
  if (done.empty()) throw std::invalid_argument("pass_rows_left: no segment of the pass was done");
  std::vector<std::int64_t> rows;  // what the segment being walked shards (the first: the sampler's pass)
  for (std::size_t s = 0; s < done.size(); ++s) {
    const PassSegment& segment = done[s];
    if (segment.world_size < 1 || segment.world_size > samples || segment.batches_done < 0)
      throw std::invalid_argument("a pass segment of " + std::to_string(segment.world_size) + " ranks and " +
                                  std::to_string(segment.batches_done) + " batches cannot be for " +
                                  std::to_string(samples) + " training samples");
    const auto done_batches = static_cast<std::size_t>(segment.batches_done);
    std::vector<char> trained(static_cast<std::size_t>(samples), 0);
    std::vector<std::int64_t> untrained;
    RunInfo ranks;
    ranks.world_size = segment.world_size;
    for (ranks.rank = 0; ranks.rank < segment.world_size; ++ranks.rank) {
      const auto batches = s == 0 ? train_pass_batches(samples, ranks, batch_size, seed, epoch)
                                  : shard_batches(rows, segment.world_size, ranks.rank, batch_size);
      if (done_batches > batches.size())
        throw std::invalid_argument("the pass segment on " + std::to_string(segment.world_size) + " ranks had " +
                                    std::to_string(batches.size()) + " batches a rank, not " +
                                    std::to_string(segment.batches_done));
      for (std::size_t b = 0; b < batches.size(); ++b)
        for (const std::int64_t row : batches[b]) {
          if (b < done_batches) trained[static_cast<std::size_t>(row)] = 1;
          else untrained.push_back(row);
        }
    }
    // Each row once: not one trained in this segment, a padded repeat once.
    rows.clear();
    for (const std::int64_t row : untrained)
      if (!trained[static_cast<std::size_t>(row)]) {
        trained[static_cast<std::size_t>(row)] = 1;
        rows.push_back(row);
      }
  }
  return rows;
}

std::vector<std::vector<std::int64_t>> pass_segment_batches(std::int64_t samples, const RunInfo& run,
                                                            std::int64_t batch_size, std::uint64_t seed, long epoch,
                                                            const std::vector<PassSegment>& before) {
  if (before.empty()) return train_pass_batches(samples, run, batch_size, seed, epoch);
  return shard_batches(pass_rows_left(samples, batch_size, seed, epoch, before), run.world_size, run.rank,
                       batch_size);
}

std::vector<std::vector<std::int64_t>> eval_pass_batches(std::int64_t samples, const RunInfo& run,
                                                         std::int64_t batch_size) {
  const std::int64_t begin = samples * run.rank / run.world_size;
  const std::int64_t end = samples * (run.rank + 1) / run.world_size;
  std::vector<std::vector<std::int64_t>> batches;
  for (std::int64_t lo = begin; lo < end; lo += batch_size) {
    batches.emplace_back();
    for (std::int64_t i = lo; i < std::min(end, lo + batch_size); ++i) batches.back().push_back(i);
  }
  return batches;
}

Prefetcher::Options pass_fetch_options(const TrainingData& data, const RunConfig& config, const RunInfo& run,
                                       long epoch, bool augment, std::uint64_t salt) {
  Prefetcher::Options o;
  o.fetch.augment = augment;
  // Per epoch, rank and phase: the same on a resumed run.
  o.fetch.seed = config.seed * 1000003u + static_cast<std::uint64_t>(epoch) * 7919u +
                 static_cast<std::uint64_t>(run.rank) * 104729u + salt;
  o.pool = data.pool.get();
  o.device = torch::Device(run.device);
  o.depth = 2 * static_cast<std::size_t>(config.data_workers);
  return o;
}

}  // namespace skein::core
