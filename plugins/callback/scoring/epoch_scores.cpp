#include "epoch_scores.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <torch/types.h>

namespace skein_scoring {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> to_vector(const torch::Tensor& t) {
  const torch::Tensor d = t.to(torch::kCPU, torch::kFloat64).contiguous();  // from the run's device
  return {d.data_ptr<double>(), d.data_ptr<double>() + d.numel()};
}

void add_into(std::vector<double>& into, const std::vector<double>& values) {
  for (std::size_t i = 0; i < values.size(); ++i) into[i] += values[i];
}

// `parts` vectors of equal length, one after the other.
std::vector<double> concat(std::initializer_list<const std::vector<double>*> parts) {
  std::vector<double> out;
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

void split(const std::vector<double>& values, std::initializer_list<std::vector<double>*> parts) {
  const std::size_t each = values.size() / parts.size();
  std::size_t at = 0;
  for (auto* p : parts) {
    p->assign(values.begin() + static_cast<long>(at), values.begin() + static_cast<long>(at + each));
    at += each;
  }
}

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

}  // namespace

void ClassCounts::resize(std::size_t classes) {
  tp.resize(classes, 0);
  predicted.resize(classes, 0);
  actual.resize(classes, 0);
}

void ClassCounts::add(const torch::Tensor& predicted_ids, const torch::Tensor& actual_ids, std::int64_t classes) {
  const auto p = predicted_ids.to(torch::kInt64).reshape({-1});
  const auto a = actual_ids.to(torch::kInt64).reshape({-1});
  const auto by_predicted = to_vector(torch::bincount(p, {}, classes));
  const auto by_actual = to_vector(torch::bincount(a, {}, classes));
  const auto hits = to_vector(torch::bincount(a.masked_select(p.eq(a)), {}, classes));
  resize(std::max({tp.size(), by_predicted.size(), by_actual.size(), hits.size()}));
  add_into(predicted, by_predicted);
  add_into(actual, by_actual);
  add_into(tp, hits);
}

std::vector<double> ClassCounts::flat() const { return concat({&tp, &predicted, &actual}); }
void ClassCounts::assign_flat(const std::vector<double>& values) { split(values, {&tp, &predicted, &actual}); }

ClassCounts::Scores ClassCounts::scores() const {
  Scores s;
  double present = 0;
  for (std::size_t c = 0; c < tp.size(); ++c) {
    s.present.push_back(predicted[c] > 0 || actual[c] > 0);
    s.precision.push_back(ratio(tp[c], predicted[c]));
    s.recall.push_back(ratio(tp[c], actual[c]));
    s.f1.push_back(ratio(2 * tp[c], predicted[c] + actual[c]));
    if (!s.present.back()) continue;
    ++present;
    s.macro_precision += s.precision.back();
    s.macro_recall += s.recall.back();
    s.macro_f1 += s.f1.back();
  }
  if (present == 0) return Scores{{}, {}, {}, {}, kNaN, kNaN, kNaN};
  s.macro_precision /= present;
  s.macro_recall /= present;
  s.macro_f1 /= present;
  return s;
}

void RegressionSums::resize(std::size_t columns) {
  for (auto* v : {&n, &y, &yy, &ee, &abs_e}) v->resize(columns, 0);
}

void RegressionSums::add(const torch::Tensor& outputs, const torch::Tensor& targets) {
  const auto o = outputs.detach().to(torch::kFloat64);
  const auto t = targets.detach().to(torch::kFloat64);
  resize(static_cast<std::size_t>(o.size(1)));
  const auto e = o - t;
  add_into(n, std::vector<double>(n.size(), static_cast<double>(o.size(0))));
  add_into(y, to_vector(t.sum(0)));
  add_into(yy, to_vector(t.square().sum(0)));
  add_into(ee, to_vector(e.square().sum(0)));
  add_into(abs_e, to_vector(e.abs().sum(0)));
}

std::vector<double> RegressionSums::flat() const { return concat({&n, &y, &yy, &ee, &abs_e}); }
void RegressionSums::assign_flat(const std::vector<double>& values) { split(values, {&n, &y, &yy, &ee, &abs_e}); }

double RegressionSums::rmse() const {
  if (n.empty() || n[0] == 0) return kNaN;
  double sum = 0;
  for (std::size_t j = 0; j < n.size(); ++j) sum += std::sqrt(ee[j] / n[j]);
  return sum / static_cast<double>(n.size());
}

double RegressionSums::mae() const {
  if (n.empty() || n[0] == 0) return kNaN;
  double sum = 0;
  for (std::size_t j = 0; j < n.size(); ++j) sum += abs_e[j] / n[j];
  return sum / static_cast<double>(n.size());
}

double RegressionSums::r2() const {
  if (n.empty() || n[0] == 0) return kNaN;
  double sum = 0;
  for (std::size_t j = 0; j < n.size(); ++j) {
    const double total = yy[j] - y[j] * y[j] / n[j];  // sum of (y - mean y)^2
    if (total > 0)
      sum += 1 - ee[j] / total;
    else
      sum += ee[j] == 0 ? 1.0 : 0.0;
  }
  return sum / static_cast<double>(n.size());
}

double roc_auc(const std::vector<double>& scores, const std::vector<double>& labels) {
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] < scores[b]; });
  // Rank sum of the positives, ties given their mean rank (1-based).
  double positives = 0, rank_sum = 0;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j < order.size() && scores[order[j]] == scores[order[i]]) ++j;
    const double mean_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (std::size_t k = i; k < j; ++k)
      if (labels[order[k]] > 0.5) {
        ++positives;
        rank_sum += mean_rank;
      }
    i = j;
  }
  const double negatives = static_cast<double>(scores.size()) - positives;
  if (positives == 0 || negatives == 0) return kNaN;
  return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives);
}

}  // namespace skein_scoring
