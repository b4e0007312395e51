#pragma once
// What the engine records of each batch in the history's batch log:
// train_loss and train_batch_size, valid_loss, valid_acc and
// valid_batch_size, and the loss's own values as <phase>_<name>. Keys are
// interned once, again after the history is replaced (a resume).
//
// On CUDA a batch's loss is a device tensor whose value the host would wait
// for (the whole step's kernels): train losses are kept there and read in
// one copy by flush(), which the trainer calls where the log is read (the
// epoch's end, a checkpoint, a session's step result).
#include <map>
#include <string>
#include <vector>

#include <torch/types.h>

#include "skein/context.hpp"
#include "skein/detail/export.hpp"
#include "skein/history.hpp"
#include "skein/loss.hpp"

namespace skein::core {

class SKEIN_EXPORT BatchRecords {
 public:
  // `defer`: keep train losses as tensors until flush() (true on CUDA).
  explicit BatchRecords(History& history, bool defer = false) : history_(history), defer_(defer) { intern(); }
  // After the history was replaced: its batch log's ids are new.
  void intern();

  // `loss`: the batch's mean loss, a 0-dim tensor.
  void train(const torch::Tensor& loss, double size);
  // Writes the deferred train losses into their rows of the batch log.
  void flush();
  // `accuracy` only for classification losses (valid_acc).
  void valid(double loss, const double* accuracy, double size);
  // The loss's extra values of `batch` (Loss::metrics), as <phase>_<name>.
  void loss_metrics(const Loss& loss, const Batch& batch, const char* phase);

 private:
  History& history_;
  bool defer_;
  std::vector<std::uint32_t> pending_rows_;  // deferred train losses: their rows
  std::vector<torch::Tensor> pending_;       // and their values, on the device
  int train_loss_ = 0, train_size_ = 0, valid_loss_ = 0, valid_acc_ = 0, valid_size_ = 0;
  std::map<std::string, int> metrics_;
};

}  // namespace skein::core
