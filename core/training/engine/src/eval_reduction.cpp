#include "skein/training/engine/eval_reduction.hpp"

#include <algorithm>

#include "skein/loss.hpp"

namespace skein::core {

void add_confusion(EvalSums& sums, const Batch& batch) {
  const std::int64_t classes = batch.outputs.size(1);
  sums.classes = std::max(sums.classes, classes);
  if (classes > kMaxConfusionClasses) return;
  const auto pairs = class_ids_of(batch.targets).to(torch::kInt64) * classes + batch.outputs.argmax(1);
  const auto counts = torch::bincount(pairs, {}, classes * classes).reshape({-1, classes});
  if (!sums.confusion.defined()) {
    sums.confusion = counts;
  } else if (counts.size(0) == sums.confusion.size(0)) {
    sums.confusion += counts;
  }
}

void EvalSums::add(const torch::Tensor& loss, const torch::Tensor& correct, double samples) {
  const torch::Tensor l = loss.detach().to(torch::kFloat64).reshape({1}) * samples;
  const torch::Tensor c = correct.defined() ? correct.to(torch::kFloat64).reshape({1}) : torch::zeros_like(l);
  const torch::Tensor pair = torch::cat({l, c});
  on_device = on_device.defined() ? on_device + pair : pair;
  values[2] += samples;
  ++batches;
}

void EvalSums::settle() {
  if (!on_device.defined()) return;
  const torch::Tensor v = on_device.to(torch::kCPU).contiguous();
  values[0] += v.data_ptr<double>()[0];
  values[1] += v.data_ptr<double>()[1];
  on_device = torch::Tensor();
}

namespace {

// The confusion counts of all ranks (a collective: every rank calls it), or
// none above kMaxConfusionClasses: then `left_out` gets the classes.
std::vector<std::vector<std::int64_t>> reduce_confusion(const EvalSums& sums, Parallel& parallel,
                                                        std::int64_t& left_out) {
  const torch::Tensor& local = sums.confusion;
  std::vector<double> size{static_cast<double>(std::max(sums.classes, local.defined() ? local.size(0) : 0))};
  parallel.all_reduce_max(size);
  const auto classes = static_cast<std::int64_t>(size[0]);
  if (classes > kMaxConfusionClasses) {
    left_out = classes;
    return {};
  }
  std::vector<double> flat(static_cast<std::size_t>(classes * classes), 0.0);
  if (local.defined() && local.size(0) == classes) {
    const auto d = local.to(torch::kCPU, torch::kFloat64).contiguous();  // counted on the run's device
    std::copy(d.data_ptr<double>(), d.data_ptr<double>() + d.numel(), flat.begin());
  }
  parallel.all_reduce_sum(flat);
  std::vector<std::vector<std::int64_t>> matrix(static_cast<std::size_t>(classes));
  for (std::int64_t t = 0; t < classes; ++t)
    for (std::int64_t p = 0; p < classes; ++p)
      matrix[static_cast<std::size_t>(t)].push_back(
          static_cast<std::int64_t>(flat[static_cast<std::size_t>(t * classes + p)]));
  return matrix;
}

}  // namespace

EvalResult reduce_eval(EvalSums sums, Parallel& parallel, bool classification) {
  sums.settle();
  auto& values = sums.values;
  // The loss's values are summed over ranks by name: only when every rank
  // evaluated a batch, so that all hold the same names (a collective either way).
  values.push_back(sums.batches == 0 ? 1.0 : 0.0);
  parallel.all_reduce_sum(values);
  const bool every_rank_has_metrics = values.back() == 0.0;
  values.pop_back();
  EvalResult r;
  r.samples = static_cast<std::int64_t>(values[2]);
  if (r.samples > 0) {
    r.loss = values[0] / values[2];
    if (classification) r.accuracy = values[1] / values[2];
  }
  if (every_rank_has_metrics && !sums.metrics.empty() && r.samples > 0) {
    std::vector<double> metric_sums;
    for (const auto& [name, sum] : sums.metrics) metric_sums.push_back(sum);
    parallel.all_reduce_sum(metric_sums);
    std::size_t i = 0;
    for (const auto& [name, sum] : sums.metrics) {
      const double mean = metric_sums[i++] / values[2];
      if (name == "acc") {
        if (!r.accuracy) r.accuracy = mean;  // bce_with_logits: accuracy from the loss's own count
      } else {
        r.metrics[name] = mean;
      }
    }
  }
  if (sums.unrecorded && classification) r.confusion = reduce_confusion(sums, parallel, r.confusion_left_out);
  return r;
}

}  // namespace skein::core
