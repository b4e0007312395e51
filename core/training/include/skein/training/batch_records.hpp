#pragma once
// What the engine records of each batch in the history's batch log:
// train_loss and train_batch_size, valid_loss, valid_acc and
// valid_batch_size, and the loss's own values as <phase>_<name>. Keys are
// interned once, again after the history is replaced (a resume).
#include <map>
#include <string>

#include "skein/context.hpp"
#include "skein/detail/export.hpp"
#include "skein/history.hpp"
#include "skein/loss.hpp"

namespace skein::core {

class SKEIN_EXPORT BatchRecords {
 public:
  explicit BatchRecords(History& history) : history_(history) { intern(); }
  // After the history was replaced: its batch log's ids are new.
  void intern();

  void train(double loss, double size);
  // `accuracy` only for classification losses (valid_acc).
  void valid(double loss, const double* accuracy, double size);
  // The loss's extra values of `batch` (Loss::metrics), as <phase>_<name>.
  void loss_metrics(const Loss& loss, const Batch& batch, const char* phase);

 private:
  History& history_;
  int train_loss_ = 0, train_size_ = 0, valid_loss_ = 0, valid_acc_ = 0, valid_size_ = 0;
  std::map<std::string, int> metrics_;
};

}  // namespace skein::core
