#include "skein/training/engine/batch_records.hpp"

namespace skein::core {

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

void BatchRecords::intern() {
  pending_.clear();  // of a log that is gone
  pending_rows_.clear();
  pending_keys_.clear();
  auto& b = history_.batches();
  train_loss_ = b.key(history_key::kTrainLoss);
  train_size_ = b.key(history_key::kTrainBatchSize);
  valid_loss_ = b.key(history_key::kValidLoss);
  valid_acc_ = b.key(history_key::kValidAcc);
  valid_size_ = b.key(history_key::kValidBatchSize);
  metrics_.clear();
}

void BatchRecords::put(int key, const torch::Tensor& value) {
  if (!defer_) {
    history_.batches().put(key, value.item<double>());
    return;
  }
  pending_rows_.push_back(history_.batches().rows() - 1);
  pending_keys_.push_back(static_cast<std::uint32_t>(key));
  pending_.push_back(value.detach().to(torch::kFloat64));
}

void BatchRecords::train(const torch::Tensor& loss, double size) {
  put(train_loss_, loss);
  history_.batches().put(train_size_, size);
}

void BatchRecords::flush() {
  if (pending_.empty()) return;
  const torch::Tensor values = torch::stack(pending_).to(torch::kCPU, torch::kFloat64).contiguous();
  const double* v = values.data_ptr<double>();
  std::vector<BatchLog::Cell> cells;
  cells.reserve(pending_.size());
  for (std::size_t i = 0; i < pending_.size(); ++i)
    cells.push_back({pending_rows_[i], pending_keys_[i], v[i]});
  pending_.clear();
  pending_rows_.clear();
  pending_keys_.clear();
  history_.batches().merge(std::move(cells));
}

void BatchRecords::valid(const torch::Tensor& loss, const torch::Tensor* correct, double size) {
  put(valid_loss_, loss);
  if (correct) put(valid_acc_, correct->to(torch::kFloat64) / size);
  history_.batches().put(valid_size_, size);
}

void BatchRecords::loss_metrics(const Loss& loss, const Batch& batch, const char* phase) {
  auto& log = history_.batches();
  for (const auto& m : loss.metrics(batch.outputs.detach(), batch.targets)) {
    const std::string key = std::string(phase) + "_" + m.name;
    auto it = metrics_.find(key);
    if (it == metrics_.end()) it = metrics_.emplace(key, log.key(key)).first;
    log.put(it->second, m.value);
  }
}

}  // namespace skein::core
