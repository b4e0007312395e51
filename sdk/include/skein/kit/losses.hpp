#pragma once
// The two families the bundled losses share: class scores against class ids
// or probabilities, and element-wise losses. Derive from one and write apply().
#include <string>

#include <torch/types.h>

#include "skein/detail/export.hpp"
#include "skein/loss.hpp"

namespace skein {

// Outputs [N, C] class scores; targets [N] int64 class ids in [0, C), or
// [N, C] class probabilities (one-hot or soft labels: rows in [0, 1] summing
// to 1) for a loss whose apply() takes them (cross_entropy; nll refuses them).
class SKEIN_EXPORT ClassificationLoss : public Loss {
 public:
  explicit ClassificationLoss(std::string owner);
  ~ClassificationLoss() override;
  torch::Tensor compute(const torch::Tensor& outputs, const torch::Tensor& targets) final;
  bool classification() const final { return true; }
  void check_targets(const torch::Tensor& targets, const DataInfo& info, const std::string& split) const override;

 protected:
  // The loss proper, on shapes already checked.
  virtual torch::Tensor apply(const torch::Tensor& outputs, const torch::Tensor& targets) = 0;
  // Checks class probabilities [N, C] (check_targets' second form).
  void check_probabilities(const torch::Tensor& targets, const DataInfo& info, const std::string& split) const;
  std::string owner_;
};

// The class ids of classification targets: ids [N] as they are, class
// probabilities [N, C] by their most likely class (for accuracy).
// Element-wise losses (regression, binary): targets are cast to the outputs'
// dtype, and targets [N] fit outputs [N, 1] (any two shapes of the same
// sample count and size). Anything else is refused, never broadcast.
class SKEIN_EXPORT ElementwiseLoss : public Loss {
 public:
  explicit ElementwiseLoss(std::string owner);
  ~ElementwiseLoss() override;
  torch::Tensor compute(const torch::Tensor& outputs, const torch::Tensor& targets) final;
  void check_targets(const torch::Tensor& targets, const DataInfo& info, const std::string& split) const override;

 protected:
  virtual torch::Tensor apply(const torch::Tensor& outputs, const torch::Tensor& targets) = 0;
  // `targets` as the outputs' shape and dtype; throws ConfigError with both shapes.
  torch::Tensor fit_targets(const torch::Tensor& outputs, const torch::Tensor& targets) const;
  std::string owner_;
};

}  // namespace skein
