#pragma once
// The data side of a run: the dataset's splits (train less the validation
// rows, valid, test), checked before training, the threads that fetch
// streaming batches ahead, and which rows each rank's batches hold.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "skein/training/config/config.hpp"
#include "skein/training/data/data_split.hpp"
#include "skein/training/data/input_scaling.hpp"
#include "skein/training/data/pass_segment.hpp"
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
// This rank's batches of the pass segment that follows `before` (the
// segments of the epoch so far, each with the batches its ranks completed):
// with none, the sampler's pass (train_pass_batches); else the rows those
// segments left untrained (pass_rows_left), cut into equal contiguous shards
// over this run's ranks (padded from the first rows when they do not divide,
// as the sampler pads a whole epoch) and into batches of `batch_size`. Throws
// std::invalid_argument when a segment claims more batches than it had.
SKEIN_EXPORT std::vector<std::vector<std::int64_t>> pass_segment_batches(std::int64_t samples, const RunInfo& run,
                                                                         std::int64_t batch_size,
                                                                         std::uint64_t seed, long epoch,
                                                                         const std::vector<PassSegment>& before);
// The rows of an epoch's pass that `done` left untrained, in global order
// (rank by rank, batch by batch), each once: a row trained anywhere in a
// segment is not left, and a padded repeat is left once.
SKEIN_EXPORT std::vector<std::int64_t> pass_rows_left(std::int64_t samples, std::int64_t batch_size,
                                                      std::uint64_t seed, long epoch,
                                                      const std::vector<PassSegment>& done);
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
