#pragma once
// Epoch-level scores of the scoring callback, kept as counts and sums so that
// ranks merge them exactly (element-wise sums), never as averaged ratios.
// Definitions follow scikit-learn's (1.2) defaults:
//   precision, recall, f1: macro over the classes present in the targets or
//     the predictions; a class never predicted has precision 0 (and one
//     never present recall 0), as zero_division does by default
//   roc_auc: binary, exact (Mann-Whitney with ties counted half)
//   rmse, mae, r2: per output column, then the mean over columns
//     (multioutput="uniform_average"); r2 of a constant column is 1 when
//     predicted exactly, else 0 (force_finite)
#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

namespace skein_scoring {

// Per class: true positives, predicted count, actual count.
struct ClassCounts {
  std::vector<double> tp, predicted, actual;

  // predicted/actual: class ids [N] in [0, classes).
  void add(const torch::Tensor& predicted_ids, const torch::Tensor& actual_ids, std::int64_t classes);
  void resize(std::size_t classes);
  std::vector<double> flat() const;  // tp, predicted, actual
  void assign_flat(const std::vector<double>& values);

  // Per class (empty where the class is absent from both) and the macro mean.
  struct Scores {
    std::vector<double> precision, recall, f1;
    std::vector<bool> present;
    double macro_precision = 0, macro_recall = 0, macro_f1 = 0;
  };
  Scores scores() const;
};

// Per output column: count, sum y, sum y^2, sum e^2, sum |e|.
struct RegressionSums {
  std::vector<double> n, y, yy, ee, abs_e;

  // outputs and targets [N, K] (any dtype).
  void add(const torch::Tensor& outputs, const torch::Tensor& targets);
  void resize(std::size_t columns);
  std::vector<double> flat() const;
  void assign_flat(const std::vector<double>& values);

  double rmse() const;
  double mae() const;
  double r2() const;
};

// Exact ROC-AUC of scores against labels (1: positive); NaN without both kinds.
double roc_auc(const std::vector<double>& scores, const std::vector<double>& labels);

}  // namespace skein_scoring
