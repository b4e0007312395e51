#pragma once
// Losses: the loss plugin kind (skein/kit/losses.hpp has two families of it).
#include <string>
#include <vector>

#include <torch/types.h>

#include "skein/detail/export.hpp"
#include "skein/run.hpp"

namespace skein {

// An extra per-batch value a loss declares (recorded as train_<name> and valid_<name>).
struct LossMetric {
  std::string name;
  double value;
};

// Base of every loss plugin (config key `loss`).
class SKEIN_EXPORT Loss {
 public:
  virtual ~Loss();
  // The batch's mean loss: a 0-dim tensor, part of the autograd graph in training.
  // Shapes that do not fit throw ConfigError naming both shapes.
  virtual torch::Tensor compute(const torch::Tensor& outputs, const torch::Tensor& targets) = 0;
  // True when outputs are class scores [N, C] and targets class ids [N]: the
  // trainer then records accuracy (valid_acc, test accuracy).
  virtual bool classification() const { return false; }
  // Checks a whole split's targets once, before training (dtype, range).
  // Throws ConfigError naming `split`.
  virtual void check_targets(const torch::Tensor& targets, const DataInfo& info, const std::string& split) const;
  // More per-batch values of this loss (sample-weighted means per epoch).
  virtual std::vector<LossMetric> metrics(const torch::Tensor& outputs, const torch::Tensor& targets) const;
};

// The class ids of classification targets: [N] ids as they are, [N, C]
// class probabilities by their largest entry.
inline torch::Tensor class_ids_of(const torch::Tensor& targets) {
  return targets.dim() == 2 ? targets.argmax(1) : targets;
}

}  // namespace skein
