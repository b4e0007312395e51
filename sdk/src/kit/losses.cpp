#include "skein/kit/losses.hpp"

#include <c10/util/Exception.h>
#include <c10/util/StringUtil.h>

#include "skein/errors.hpp"

namespace skein {

namespace {

[[noreturn]] void shape_mismatch(const std::string& owner, const torch::Tensor& outputs,
                                 const torch::Tensor& targets, const std::string& expected) {
  throw ConfigError(owner + ": model outputs of shape " + c10::str(outputs.sizes()) + " do not fit targets of shape " +
                    c10::str(targets.sizes()) + " (" + expected + ")");
}

}  // namespace

ClassificationLoss::ClassificationLoss(std::string owner) : owner_(std::move(owner)) {}
ClassificationLoss::~ClassificationLoss() = default;

torch::Tensor ClassificationLoss::compute(const torch::Tensor& outputs, const torch::Tensor& targets) {
  const bool ids = targets.dim() == 1;
  const bool probabilities = targets.dim() == 2 && targets.is_floating_point() && targets.sizes() == outputs.sizes();
  if (outputs.dim() != 2 || !(ids || probabilities) || outputs.size(0) != targets.size(0))
    shape_mismatch(owner_, outputs, targets,
                   "expected class scores [N, C] and class ids [N] or class probabilities [N, C]");
  return apply(outputs, probabilities ? targets.to(outputs.scalar_type()) : targets);
}

void ClassificationLoss::check_targets(const torch::Tensor& targets, const DataInfo& info,
                                       const std::string& split) const {
  if (targets.is_floating_point() && targets.dim() == 2) {
    check_probabilities(targets, info, split);
    return;
  }
  if (targets.scalar_type() != torch::kLong)
    throw ConfigError(owner_ + ": the " + split + " targets are " + std::string(c10::toString(targets.scalar_type())) +
                      " of shape " + c10::str(targets.sizes()) +
                      ", but a classification loss takes int64 class ids [N] or class probabilities [N, C] "
                      "(one-hot or soft labels); for 0/1 targets use the loss bce_with_logits, for real-valued "
                      "targets a regression loss such as mse");
  if (targets.dim() != 1)
    throw ConfigError(owner_ + ": the " + split + " targets have shape " + c10::str(targets.sizes()) +
                      "; a classification loss takes one class id per sample, shape [N]");
  if (targets.numel() > 0 && (targets.min().item<std::int64_t>() < 0 ||
                              targets.max().item<std::int64_t>() >= info.num_classes))
    throw std::runtime_error("dataset: " + split + " targets fall outside [0, " + std::to_string(info.num_classes) +
                             ")");  // bad data, not a bad config
}

// Soft or one-hot labels: one row of C probabilities per sample (what
// libtorch's cross_entropy takes as targets of the outputs' shape).
void ClassificationLoss::check_probabilities(const torch::Tensor& targets, const DataInfo& info,
                                             const std::string& split) const {
  const std::string what = owner_ + ": the " + split + " targets are class probabilities of shape " + c10::str(targets.sizes());
  if (info.num_classes > 0 && targets.size(1) != info.num_classes)
    throw ConfigError(what + ", but the dataset has " + std::to_string(info.num_classes) + " classes");
  if (targets.numel() == 0) return;
  const auto t = targets.to(torch::kDouble);
  if (!t.isfinite().all().item<bool>() || t.min().item<double>() < 0 || t.max().item<double>() > 1)
    throw std::runtime_error("dataset: " + split + " targets: probabilities must be finite and in [0, 1] (" +
                             owner_ + ")");  // bad data, not a bad config
  const double worst = (t.sum(1) - 1).abs().max().item<double>();
  if (worst > 1e-3)
    throw std::runtime_error("dataset: " + split + " targets: each row of class probabilities must sum to 1 (one "
                             "is off by " + std::to_string(worst) + "; " + owner_ + ")");
}

ElementwiseLoss::ElementwiseLoss(std::string owner) : owner_(std::move(owner)) {}
ElementwiseLoss::~ElementwiseLoss() = default;

torch::Tensor ElementwiseLoss::fit_targets(const torch::Tensor& outputs, const torch::Tensor& targets) const {
  torch::Tensor t = targets;
  if (outputs.sizes() != targets.sizes()) {
    // [N] targets against [N, 1] outputs (or any other layout of the same
    // values per sample); never a broadcast, which would silently pair every
    // output with every target.
    const bool same_samples = outputs.dim() > 0 && targets.dim() > 0 && outputs.size(0) == targets.size(0);
    if (!same_samples || outputs.numel() != targets.numel())
      shape_mismatch(owner_, outputs, targets, "expected the same number of values per sample");
    t = targets.reshape(outputs.sizes());
  }
  return t.to(outputs.scalar_type());
}

torch::Tensor ElementwiseLoss::compute(const torch::Tensor& outputs, const torch::Tensor& targets) {
  return apply(outputs, fit_targets(outputs, targets));
}

void ElementwiseLoss::check_targets(const torch::Tensor& targets, const DataInfo&, const std::string& split) const {
  if (!targets.is_floating_point() && targets.scalar_type() != torch::kLong &&
      targets.scalar_type() != torch::kInt && targets.scalar_type() != torch::kByte &&
      targets.scalar_type() != torch::kBool)
    throw ConfigError(owner_ + ": the " + split + " targets are " +
                      std::string(c10::toString(targets.scalar_type())) + ", not numbers this loss can take");
}

}  // namespace skein
