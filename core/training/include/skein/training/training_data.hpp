#pragma once
// The data side of a run: the dataset's splits (train less the validation
// rows, valid, test), checked before training, the threads that fetch
// streaming batches ahead, and which rows each rank's batches hold.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "skein/training/config.hpp"
#include "skein/training/data_split.hpp"
#include "skein/training/input_scaling.hpp"
#include "skein/dataset.hpp"
#include "skein/detail/export.hpp"
#include "skein/loss.hpp"
#include "skein/run.hpp"

namespace skein::core {

struct SKEIN_EXPORT TrainingData {
  DataSplit train, valid;
  std::optional<DataSplit> test;
  std::unique_ptr<boost::asio::thread_pool> pool;  // fetches streaming batches ahead; null: all in memory
  InputScaling scaling;                            // "standardize" (inactive without it)
  std::optional<InputScale> data_scaling;          // the dataset's own (ScaledInputs), before standardize

  TrainingData();
  TrainingData(TrainingData&&) noexcept;
  TrainingData& operator=(TrainingData&&) noexcept;
  ~TrainingData();
};

// What open_training_data reads.
struct DataSource {
  Dataset& data;
  const PluginUse& use;  // the dataset's config slot (errors name it)
  const DataInfo& info;
  const Loss& loss;      // checks the targets
};

// The splits of `source` as `config` asks (valid_split, valid_stratified,
// standardize, data_workers), their targets and held-out shapes checked;
// ConfigError naming the dataset when they do not fit.
SKEIN_EXPORT TrainingData open_training_data(const DataSource& source, const RunConfig& config, const RunInfo& run);

// Train batches of an epoch per rank: every rank gets ceil(n / world) samples
// (the sampler pads), so all ranks run as many batches and sync steps.
SKEIN_EXPORT long train_batches_per_epoch(std::int64_t samples, int world_size, std::int64_t batch_size);
// This rank's batches (positions in the split) of one epoch's training pass:
// a permutation drawn from the seed and the epoch alone, so that a resumed
// epoch draws the same one.
SKEIN_EXPORT std::vector<std::vector<std::int64_t>> train_pass_batches(std::int64_t samples, const RunInfo& run,
                                                                       std::int64_t batch_size, std::uint64_t seed,
                                                                       long epoch);
// Where an epoch's training pass stood when a checkpoint was written inside
// it: how many ranks began it and how many batches each had trained.
struct PassStart {
  int world_size = 1;
  long batches_done = 0;
};
// What is left of a pass that `began` ranks started, re-sharded over this
// run's ranks by global sample index (elastic resume inside an epoch): the
// old ranks' untrained rows in rank order, each taken once, cut into equal
// contiguous shards (padded from the first ones when the rest does not divide,
// as the sampler pads a whole epoch) and into batches of `batch_size`.
SKEIN_EXPORT std::vector<std::vector<std::int64_t>> resumed_pass_batches(std::int64_t samples, const RunInfo& run,
                                                                         std::int64_t batch_size,
                                                                         std::uint64_t seed, long epoch,
                                                                         const PassStart& began);
// This rank's batches of an evaluation pass: every sample exactly once over
// all ranks (contiguous shards, no padding).
SKEIN_EXPORT std::vector<std::vector<std::int64_t>> eval_pass_batches(std::int64_t samples, const RunInfo& run,
                                                                      std::int64_t batch_size);
// How a pass's batches are fetched: augmented or not, with a seed of the run's
// seed, the epoch, the rank and `salt` (passes of one epoch told apart), so
// that a resumed run fetches the same.
SKEIN_EXPORT Prefetcher::Options pass_fetch_options(const TrainingData& data, const RunConfig& config,
                                                    const RunInfo& run, long epoch, bool augment, std::uint64_t salt);

}  // namespace skein::core
