#include "skein/training/batch_records.hpp"

namespace skein::core {

void BatchRecords::intern() {
  auto& b = history_.batches();
  train_loss_ = b.key(history_key::kTrainLoss);
  train_size_ = b.key(history_key::kTrainBatchSize);
  valid_loss_ = b.key(history_key::kValidLoss);
  valid_acc_ = b.key(history_key::kValidAcc);
  valid_size_ = b.key(history_key::kValidBatchSize);
  metrics_.clear();
}

void BatchRecords::train(double loss, double size) {
  auto& log = history_.batches();
  log.put(train_loss_, loss);
  log.put(train_size_, size);
}

void BatchRecords::valid(double loss, const double* accuracy, double size) {
  auto& log = history_.batches();
  log.put(valid_loss_, loss);
  if (accuracy) log.put(valid_acc_, *accuracy);
  log.put(valid_size_, size);
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
