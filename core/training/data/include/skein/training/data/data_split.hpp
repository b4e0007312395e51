#pragma once
// The trainer's view of a split: some rows of a SampleSource, fetched batch by
// batch, and the prefetching of an epoch's batches on worker threads.
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "skein/dataset.hpp"
#include "skein/detail/export.hpp"

namespace boost::asio {
class thread_pool;
}

namespace skein::core {

// A source over a split held in memory (fetch = index_select).
SKEIN_EXPORT std::shared_ptr<const SampleSource> memory_source(TensorSplit split);

class SKEIN_EXPORT DataSplit {
 public:
  DataSplit() = default;
  // All rows of `source` in order, or those listed in `rows` (int64 [M]).
  explicit DataSplit(std::shared_ptr<const SampleSource> source, torch::Tensor rows = {});
  std::int64_t size() const;
  // The samples at these positions of this split.
  TensorSplit fetch(const std::vector<std::int64_t>& positions, const FetchOptions& options) const;
  // The source holds its targets in memory (SampleSource::targets_in_memory):
  // they were checked before training, and fetching is cheap, so prefetching
  // would only add overhead.
  bool in_memory() const { return in_memory_; }
  // (train, valid): a `fraction` of the rows, drawn by a permutation of `seed`
  // alone (so the split depends on neither the world size nor other draws).
  std::pair<DataSplit, DataSplit> split_off(double fraction, std::uint64_t seed) const;
  // The same per class: of each class's rows (class ids `targets` [N], one
  // per row of this split), floor(fraction * count) go to valid, drawn by a
  // permutation of `seed`; both parts keep the order of that permutation.
  std::pair<DataSplit, DataSplit> split_off_stratified(double fraction, std::uint64_t seed,
                                                       const torch::Tensor& targets) const;

 private:
  std::shared_ptr<const SampleSource> source_;
  torch::Tensor rows_;  // undefined: every row
  bool in_memory_ = false;
};

// The batches of one pass over a split, fetched in order; with a pool, up to
// `depth` batches ahead on its threads. Exceptions of a fetch surface in next().
class SKEIN_EXPORT Prefetcher {
 public:
  struct Options {
    FetchOptions fetch;              // fetch.seed is mixed with each batch's index
    boost::asio::thread_pool* pool = nullptr;  // null: fetch on the calling thread
    std::size_t depth = 4;
    // The first batch fetched (a resumed epoch): earlier ones are skipped
    // unread, and every batch keeps the seed it has in the whole pass.
    std::size_t first = 0;
    // Where next() delivers the batches. On CUDA they are fetched into pinned
    // host memory (on the pool's threads) and copied without blocking, so the
    // copy overlaps the work already queued on the device.
    torch::Device device = torch::kCPU;
    // Run by next() on each batch's targets while they are still on the host
    // (a streaming split's Loss::check_targets: no read from the device); its
    // exception surfaces there. Empty: none.
    std::function<void(const torch::Tensor& targets)> check_targets;
  };
  Prefetcher(const DataSplit& split, std::vector<std::vector<std::int64_t>> batches, Options options);
  ~Prefetcher();  // waits for fetches still running (they read the split)
  std::optional<TensorSplit> next();

 private:
  void launch(std::size_t batch);
  FetchOptions options_for(std::size_t batch) const;
  TensorSplit fetch_pinned(std::size_t batch) const;  // pinned when bound for CUDA
  TensorSplit on_device(TensorSplit fetched) const;
  const DataSplit& split_;
  std::vector<std::vector<std::int64_t>> batches_;
  Options options_;
  std::size_t next_launch_ = 0, next_take_ = 0;
  std::deque<std::future<TensorSplit>> pending_;
};

}  // namespace skein::core
