#pragma once
// An evaluation's sums on one rank, and their reduction over every rank to
// the split's loss, accuracy, the loss's values and (the test split of a
// classification loss) the confusion matrix.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "skein/context.hpp"
#include "skein/detail/export.hpp"
#include "skein/parallel.hpp"

namespace skein::core {

// The most classes a test confusion matrix is kept for: its C x C counts go
// into results.json (1000 classes: a million numbers, some MB). Above it the
// matrix is left out (EvalResult::confusion_left_out, a note in train.log
// and results.json), never allocated: 60,000 classes would need 28.8 GB.
inline constexpr std::int64_t kMaxConfusionClasses = 1000;

// Loss and accuracy summed over every rank's share of a split.
struct EvalResult {
  double loss = 0;
  std::optional<double> accuracy;  // classification losses, or a loss that records "acc"
  std::int64_t samples = 0;
  // The loss's other recorded values (Loss::metrics), sample-weighted means.
  std::map<std::string, double> metrics;
  // Classification losses, unrecorded passes (the test split): samples by
  // [true class][predicted class], over all ranks.
  std::vector<std::vector<std::int64_t>> confusion;
  // The number of classes when it is above kMaxConfusionClasses (confusion
  // then stays empty), else 0.
  std::int64_t confusion_left_out = 0;
};

// loss * samples, correct, samples of this rank's evaluation batches.
struct SKEIN_EXPORT EvalSums {
  // A batch's mean loss and count of right classes (0-dim tensors; `correct`
  // undefined for other losses), kept where they were computed: on CUDA the
  // host waits for them once, in settle(), not at every batch.
  void add(const torch::Tensor& loss, const torch::Tensor& correct, double samples);
  // values[0] and [1] from the batches added so far (one copy to the host).
  void settle();

  std::vector<double> values{0.0, 0.0, 0.0};
  torch::Tensor on_device;                 // float64 [2]: loss * samples, correct; until settle()
  std::map<std::string, double> metrics;  // name -> sum of value * batch size (unrecorded passes)
  torch::Tensor confusion;                 // int64 [C, C] (unrecorded passes, classification)
  std::int64_t classes = 0;                // C of the classification batches seen (0: none)
  bool unrecorded = false;                 // the test split: no valid_* records
  long batches = 0;
};

// Adds the (true class, predicted class) counts of a classification batch;
// only counts its classes above kMaxConfusionClasses.
SKEIN_EXPORT void add_confusion(EvalSums& sums, const Batch& batch);
// Sums over every rank as a result (settled first): a collective, every rank calls it.
SKEIN_EXPORT EvalResult reduce_eval(EvalSums sums, Parallel& parallel, bool classification);

}  // namespace skein::core
