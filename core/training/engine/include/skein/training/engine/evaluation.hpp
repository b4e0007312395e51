#pragma once
// One evaluation batch without gradients: recorded as valid_* values with the
// callbacks' batch hooks (validation), or only summed (the test split: the
// loss's values and a classifier's confusion counts too).
#include "skein/detail/export.hpp"
#include "skein/training/engine/eval_reduction.hpp"
#include "skein/training/engine/step_parts.hpp"

namespace skein::core {

class SKEIN_EXPORT EvalStep {
 public:
  explicit EvalStep(StepParts parts) : p_(parts) {}
  void run(Batch& batch, bool record, EvalSums& sums);

 private:
  StepParts p_;
};

}  // namespace skein::core
