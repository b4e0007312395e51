#include "skein/training/engine/epoch_summary.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace skein::core {

namespace {

// "<key>_best": whether the last epoch's value of `key` beats every earlier one.
void mark_best(History& history, const std::string& key) {
  const double value = history.last().at(key).get<double>();
  bool best = !std::isnan(value);
  for (std::size_t e = 0; best && e + 1 < history.size(); ++e) {
    auto prev = history.get(static_cast<long>(e), key);
    if (!prev.is_number()) continue;
    double p = prev.get<double>();
    best = lower_is_better(key) ? value < p : value > p;
  }
  history.record(history_key::best_mark(key), best);
}

}  // namespace

void summarize_epoch(History& history, double seconds) {
  const nlohmann::json& epoch = history.last();
  std::map<std::string, std::pair<double, double>> sums;  // key -> (sum v*n, sum n)
  std::vector<std::string> order;  // the keys of sums as the batch rows first hold them
  for (const auto& row : epoch.at(history_key::kBatches)) {
    for (const char* phase : {"train", "valid"}) {
      auto size_it = row.find(std::string(phase) + "_batch_size");
      if (size_it == row.end()) continue;
      const double n = size_it->get<double>();
      for (auto it = row.begin(); it != row.end(); ++it) {
        if (it.key().rfind(phase, 0) != 0 || it.key() == size_it.key()) continue;
        if (!sums.count(it.key())) order.push_back(it.key());
        auto& s = sums[it.key()];
        s.first += it.value().get<double>() * n;
        s.second += n;
      }
    }
  }
  // Recorded in the order the batches recorded them, which this rank's batch
  // log keeps (rows are JSON objects, sorted): train_loss, valid_loss,
  // valid_acc, not alphabetically; history.json keeps that order.
  const std::vector<std::string>& logged = history.batches().keys();
  const auto place = [&](const std::string& key) { return std::find(logged.begin(), logged.end(), key) - logged.begin(); };
  std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) { return place(a) < place(b); });
  for (const std::string& key : order) {
    const auto& s = sums.at(key);
    history.record(key, s.first / s.second);
    mark_best(history, key);
  }
  history.record(history_key::kDuration, seconds);
}

void mark_best_of_epoch_scores(History& history) {
  std::vector<std::string> keys;
  const nlohmann::json& epoch = history.last();
  for (auto it = epoch.begin(); it != epoch.end(); ++it) {
    const std::string& key = it.key();
    const bool phase = key.rfind("train_", 0) == 0 || key.rfind("valid_", 0) == 0;
    if (phase && !history_key::is_best_mark(key) && it.value().is_number() &&
        !epoch.contains(history_key::best_mark(key)))
      keys.push_back(key);
  }
  for (const auto& key : keys) mark_best(history, key);
}

}  // namespace skein::core
