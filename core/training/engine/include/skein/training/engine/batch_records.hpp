#pragma once
// What the engine records of each batch in the history's batch log:
// train_loss and train_batch_size, valid_loss, valid_acc and
// valid_batch_size, and the loss's own values as <phase>_<name>. Keys are
// interned once, again after the history is replaced (a resume).
//
// On CUDA a batch's loss is a device tensor whose value the host would wait
// for (the whole step's kernels): train losses, and validation's losses and
// accuracies, are kept there and read in one copy by flush(), which the
// trainer calls where the log is read (the epoch's end, a checkpoint, a
// session's step result).
#include <map>
#include <string>
#include <vector>

#include <torch/types.h>

#include "skein/context.hpp"
#include "skein/detail/export.hpp"
#include "skein/history.hpp"
#include "skein/loss.hpp"

namespace skein::core {

// Appends the rows of `from` to `to`, by key name: `to` keeps the ids its
// users interned (a reopened epoch's records before its new ones).
SKEIN_EXPORT void append_rows(BatchLog& to, const BatchLog& from);

class SKEIN_EXPORT BatchRecords {
 public:
  // `defer`: keep losses and accuracies as tensors until flush() (true on CUDA).
  explicit BatchRecords(History& history, bool defer = false) : history_(history), defer_(defer) { intern(); }
  // After the history was replaced: its batch log's ids are new.
  void intern();

  // `loss`: the batch's mean loss, a 0-dim tensor.
  void train(const torch::Tensor& loss, double size);
  // Writes the deferred values into their rows of the batch log.
  void flush();
  // `loss`: the batch's mean loss; `correct`: its count of right classes
  // (0-dim tensors), only for classification losses (valid_acc).
  void valid(const torch::Tensor& loss, const torch::Tensor* correct, double size);
  // The loss's extra values of `batch` (Loss::metrics), as <phase>_<name>.
  void loss_metrics(const Loss& loss, const Batch& batch, const char* phase);

 private:
  History& history_;
  bool defer_;
  // A value kept on the device: its row of the log, its key, and itself.
  void put(int key, const torch::Tensor& value);
  std::vector<std::uint32_t> pending_rows_;  // deferred values: their rows
  std::vector<std::uint32_t> pending_keys_;  // their keys
  std::vector<torch::Tensor> pending_;       // and themselves (0-dim, on the device)
  int train_loss_ = 0, train_size_ = 0, valid_loss_ = 0, valid_acc_ = 0, valid_size_ = 0;
  std::map<std::string, int> metrics_;
};

}  // namespace skein::core
