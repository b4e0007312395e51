#pragma once
// The training history, shaped like skorch's: a list of epochs, each a JSON
// object of epoch-level values plus a "batches" list of per-batch objects.
//
// Per-batch values go through BatchLog, a flat numeric buffer with interned
// keys, so recording a batch builds no JSON and (amortised) allocates nothing.
// At epoch end the pending records of every rank are committed into the
// epoch's "batches" list in one go.
//
// history.json keeps the order keys were recorded in, as skorch's does
// ("epoch" first): the epochs are held as nlohmann::json, whose objects sort
// their keys, and the History remembers the order each key first came in.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "skein/detail/json.hpp"

#include "skein/detail/export.hpp"

namespace skein {

class SKEIN_EXPORT BatchLog {
 public:
  struct Cell {
    std::uint32_t row;
    std::uint32_t key;
    double value;
  };

  // Interned id of a key; stable for the life of the log (clear() keeps keys).
  int key(std::string_view name);
  void new_row() { ++rows_; }
  // Records into the current (last) row; new_row() must have been called.
  void put(int key, double value) {
    cells_.push_back({rows_ - 1, static_cast<std::uint32_t>(key), value});
  }

  // API 3.2: records into rows already begun (each cell's row < rows()),
  // merged in row order after the cells those rows hold: values the engine
  // kept on a device and read once, later than their rows were written.
  void merge(std::vector<Cell> cells);

  std::uint32_t rows() const { return rows_; }
  const std::vector<std::string>& keys() const { return keys_; }
  const std::vector<Cell>& cells() const { return cells_; }
  void clear();

  // Compact binary form, for exchanging one epoch's records between ranks.
  std::string to_bytes() const;
  static BatchLog from_bytes(std::string_view bytes);

 private:
  std::vector<std::string> keys_;
  std::vector<Cell> cells_;
  std::uint32_t rows_ = 0;
};

class SKEIN_EXPORT History {
 public:
  // Appends {"epoch": n, "batches": []} (n counts from 1).
  void new_epoch();
  // Sets an epoch-level value in the last epoch.
  void record(const std::string& key, nlohmann::json value);

  // This process's pending per-batch records of the current epoch.
  BatchLog& batches() { return pending_; }
  const BatchLog& batches() const { return pending_; }
  // Moves pending records into the last epoch's "batches" (this rank only).
  void commit_batches();
  // Replaces them with the records of every rank, ordered by rank then batch;
  // each row is marked with its "rank". Clears the pending log.
  void commit_batches(const std::vector<BatchLog>& by_rank);

  std::size_t size() const { return epochs_.size(); }
  bool empty() const { return epochs_.empty(); }
  const nlohmann::json& epochs() const { return epochs_; }
  const nlohmann::json& last() const;
  // Value of `key` in epoch `index` (0-based; negative counts from the end),
  // or null when absent.
  nlohmann::json get(long index, const std::string& key) const;

  // skorch's History.to_file layout: a JSON array of epoch objects, each
  // object's keys in the order they were first recorded (API 3.4; before:
  // alphabetical). Non-finite numbers are written as the strings "NaN",
  // "Infinity", "-Infinity".
  std::string dump(int indent = -1) const;
  void save(const std::string& path) const;  // atomic (temp file + rename)
  // Keys in any order are read; those of a sorted nlohmann::json come in
  // "epoch", "batches", then alphabetically. API 3.4: the ordered_json
  // overload (load's) keeps the order they come in.
  static History from_json(const nlohmann::json& epochs);
  static History from_json(const nlohmann::ordered_json& epochs);
  static History load(const std::string& path);
  // API 3.4: the first `n` epochs (all when there are fewer), keys in the
  // same order: a checkpoint written inside an epoch keeps the complete ones.
  History first_epochs(std::size_t n) const;

 private:
  template <class Json>
  void learn_order(const Json& epoch);

  nlohmann::json epochs_ = nlohmann::json::array();
  BatchLog pending_;
  // API 3.4, at the end (plugins get a History by reference, never build
  // one): the keys of the epochs, and of their batch rows, in the order
  // each first came in.
  std::vector<std::string> key_order_;
  std::vector<std::string> batch_key_order_;
};

// The keys skein itself records in a history: their one home (the trainer,
// the history backends, loggers and callbacks name them from here).
namespace history_key {
inline constexpr const char* kEpoch = "epoch";        // 1, 2, ... in every epoch
// The world size, in the first epoch after a resume that changed it.
inline constexpr const char* kWorldSize = "world_size";
inline constexpr const char* kBatches = "batches";    // the epoch's batch records
inline constexpr const char* kRank = "rank";          // the rank of a batch record (merged histories)
inline constexpr const char* kDuration = "dur";       // seconds the epoch took (its slowest rank)
inline constexpr const char* kTrainLoss = "train_loss";
inline constexpr const char* kTrainBatchSize = "train_batch_size";
inline constexpr const char* kValidLoss = "valid_loss";
inline constexpr const char* kValidAcc = "valid_acc";
inline constexpr const char* kValidBatchSize = "valid_batch_size";
inline constexpr const char* kLearningRate = "lr";    // recorded by lr_scheduler
inline constexpr const char* kSkippedSteps = "skipped_steps";  // precision 16-mixed: steps with inf/NaN gradients
// "<key>_best": true when the epoch's value of key beats every earlier one.
inline constexpr std::string_view kBestSuffix = "_best";
inline std::string best_mark(const std::string& key) { return key + std::string(kBestSuffix); }
inline bool is_best_mark(std::string_view key) {
  return key.size() > kBestSuffix.size() && key.substr(key.size() - kBestSuffix.size()) == kBestSuffix;
}
// Batch sizes recorded to weigh the epoch means ("<phase>_batch_size").
inline bool is_batch_size(std::string_view key) {
  constexpr std::string_view suffix = "_batch_size";
  return key.size() > suffix.size() && key.substr(key.size() - suffix.size()) == suffix;
}
// Keys whose values are counts: a whole number recorded for one (BatchLog
// holds doubles) is written as an integer, 64 rather than 64.0.
inline bool is_count(std::string_view key) {
  return is_batch_size(key) || key == kSkippedSteps || key == kWorldSize || key == kRank || key == kEpoch;
}
}  // namespace history_key

// Whether smaller values of a history key are better: keys ending in "loss"
// (and "error") are, others (accuracies, scores) are not.
SKEIN_EXPORT bool lower_is_better(const std::string& key);

// The documented encoding of non-finite numbers in Skein's JSON files.
SKEIN_EXPORT nlohmann::json encode_nonfinite(const nlohmann::json& value);
SKEIN_EXPORT nlohmann::json decode_nonfinite(const nlohmann::json& value);

}  // namespace skein
