#include "skein/training/data/data_split.hpp"

#include "skein/training/device/device.hpp"

#include <cmath>
#include <map>

#include <ATen/CPUGeneratorImpl.h>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "skein/io/index_tensor.hpp"

namespace skein::core {

namespace {

class MemorySource final : public SampleSource {
 public:
  explicit MemorySource(TensorSplit split) : split_(std::move(split)) {}
  std::int64_t size() const override { return split_.size(); }
  TensorSplit fetch(const std::vector<std::int64_t>& indices, const FetchOptions&) const override {
    const torch::Tensor idx = index_tensor(indices);
    return {split_.inputs.index_select(0, idx), split_.targets.index_select(0, idx)};
  }
  torch::Tensor targets_in_memory() const override { return split_.targets; }

 private:
  TensorSplit split_;
};

}  // namespace

std::shared_ptr<const SampleSource> memory_source(TensorSplit split) {
  return std::make_shared<MemorySource>(std::move(split));
}

DataSplit::DataSplit(std::shared_ptr<const SampleSource> source, torch::Tensor rows)
    : source_(std::move(source)), rows_(std::move(rows)), in_memory_(source_ && source_->targets_in_memory().defined()) {}

std::int64_t DataSplit::size() const {
  if (!source_) return 0;
  return rows_.defined() ? rows_.size(0) : source_->size();
}

TensorSplit DataSplit::fetch(const std::vector<std::int64_t>& positions, const FetchOptions& options) const {
  if (!rows_.defined()) return source_->fetch(positions, options);
  const auto* rows = rows_.data_ptr<std::int64_t>();
  std::vector<std::int64_t> mapped(positions.size());
  for (std::size_t i = 0; i < positions.size(); ++i) mapped[i] = rows[positions[i]];
  return source_->fetch(mapped, options);
}

std::pair<DataSplit, DataSplit> DataSplit::split_off(double fraction, std::uint64_t seed) const {
  const std::int64_t n = size();
  const auto n_valid = static_cast<std::int64_t>(std::floor(static_cast<double>(n) * fraction));
  if (n_valid == 0) return {*this, DataSplit{}};
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  torch::Tensor perm = torch::randperm(n, gen, torch::kLong);
  if (rows_.defined()) perm = rows_.index_select(0, perm);
  return {DataSplit(source_, perm.slice(0, n_valid).contiguous()),
          DataSplit(source_, perm.slice(0, 0, n_valid).contiguous())};
}

std::pair<DataSplit, DataSplit> DataSplit::split_off_stratified(double fraction, std::uint64_t seed,
                                                                 const torch::Tensor& targets) const {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const torch::Tensor perm = torch::randperm(size(), gen, torch::kLong);
  const torch::Tensor labels = targets.index_select(0, perm).contiguous();
  const auto* label = labels.data_ptr<std::int64_t>();
  const auto* row = perm.data_ptr<std::int64_t>();
  std::map<std::int64_t, std::int64_t> total, taken;
  for (std::int64_t i = 0; i < labels.size(0); ++i) ++total[label[i]];
  std::vector<std::int64_t> train_rows, valid_rows;
  for (std::int64_t i = 0; i < labels.size(0); ++i) {
    const auto quota = static_cast<std::int64_t>(std::floor(static_cast<double>(total[label[i]]) * fraction));
    (taken[label[i]]++ < quota ? valid_rows : train_rows).push_back(row[i]);
  }
  if (valid_rows.empty()) return {*this, DataSplit{}};
  auto rows_of = [&](const std::vector<std::int64_t>& positions) {
    torch::Tensor t = torch::tensor(positions, torch::kLong);
    return rows_.defined() ? rows_.index_select(0, t) : t;
  };
  return {DataSplit(source_, rows_of(train_rows)), DataSplit(source_, rows_of(valid_rows))};
}

Prefetcher::Prefetcher(const DataSplit& split, std::vector<std::vector<std::int64_t>> batches, Options options)
    : split_(split), batches_(std::move(batches)), options_(options) {
  if (options_.depth == 0) options_.depth = 1;
  next_launch_ = next_take_ = std::min(options_.first, batches_.size());
}

Prefetcher::~Prefetcher() {
  for (auto& f : pending_)
    if (f.valid()) f.wait();
}

FetchOptions Prefetcher::options_for(std::size_t batch) const {
  FetchOptions o = options_.fetch;
  o.seed = mixed_seed(o.seed, batch);  // a distinct, reproducible seed per batch
  return o;
}

TensorSplit Prefetcher::fetch_pinned(std::size_t batch) const {
  TensorSplit fetched = split_.fetch(batches_[batch], options_for(batch));
  if (options_.device.is_cuda()) {
    fetched.inputs = fetched.inputs.pin_memory();
    fetched.targets = fetched.targets.pin_memory();
  }
  return fetched;
}

TensorSplit Prefetcher::on_device(TensorSplit fetched) const {
  if (options_.device.is_cpu()) return fetched;
  return {fetched.inputs.to(options_.device, /*non_blocking=*/true),
          fetched.targets.to(options_.device, /*non_blocking=*/true)};
}

void Prefetcher::launch(std::size_t batch) {
  auto task = std::make_shared<std::packaged_task<TensorSplit()>>([this, batch] { return fetch_pinned(batch); });
  pending_.push_back(task->get_future());
  boost::asio::post(*options_.pool, [task] { (*task)(); });
}

std::optional<TensorSplit> Prefetcher::next() {
  if (next_take_ >= batches_.size()) return std::nullopt;
  const std::size_t batch = next_take_++;
  TensorSplit fetched;
  if (!options_.pool) {
    fetched = fetch_pinned(batch);
  } else {
    while (next_launch_ < batches_.size() && next_launch_ < batch + options_.depth) launch(next_launch_++);
    std::future<TensorSplit> f = std::move(pending_.front());
    pending_.pop_front();
    fetched = f.get();
  }
  if (options_.check_targets) options_.check_targets(fetched.targets);
  return on_device(std::move(fetched));
}

}  // namespace skein::core
