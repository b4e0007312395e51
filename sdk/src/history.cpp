#include "skein/history.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <stdexcept>

#include "skein/io/atomic_file.hpp"

namespace skein {

// ---- BatchLog -------------------------------------------------------------

int BatchLog::key(std::string_view name) {
  for (std::size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] == name) return static_cast<int>(i);
  keys_.emplace_back(name);
  return static_cast<int>(keys_.size() - 1);
}

void BatchLog::merge(std::vector<Cell> cells) {
  for (const auto& c : cells)
    if (c.row >= rows_ || c.key >= keys_.size()) throw std::out_of_range("BatchLog::merge: a cell beyond the log");
  const auto by_row = [](const Cell& a, const Cell& b) { return a.row < b.row; };
  std::stable_sort(cells.begin(), cells.end(), by_row);
  std::vector<Cell> merged;
  merged.reserve(cells_.size() + cells.size());
  std::merge(cells_.begin(), cells_.end(), cells.begin(), cells.end(), std::back_inserter(merged), by_row);
  cells_ = std::move(merged);
}

void BatchLog::clear() {
  cells_.clear();
  rows_ = 0;
}

namespace {
template <class T>
void put_raw(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
T take_raw(std::string_view& in) {
  if (in.size() < sizeof(T)) throw std::runtime_error("batch log: truncated record");
  T v;
  std::memcpy(&v, in.data(), sizeof v);
  in.remove_prefix(sizeof v);
  return v;
}
}  // namespace

// Layout: u32 rows, u32 nkeys, {u32 len, bytes}*, u64 ncells, cells (host byte order:
// all ranks of a run share one architecture).
std::string BatchLog::to_bytes() const {
  std::string out;
  put_raw(out, rows_);
  put_raw(out, static_cast<std::uint32_t>(keys_.size()));
  for (const auto& k : keys_) {
    put_raw(out, static_cast<std::uint32_t>(k.size()));
    out += k;
  }
  put_raw(out, static_cast<std::uint64_t>(cells_.size()));
  out.append(reinterpret_cast<const char*>(cells_.data()), cells_.size() * sizeof(Cell));
  return out;
}

BatchLog BatchLog::from_bytes(std::string_view in) {
  BatchLog log;
  log.rows_ = take_raw<std::uint32_t>(in);
  auto nkeys = take_raw<std::uint32_t>(in);
  for (std::uint32_t i = 0; i < nkeys; ++i) {
    auto len = take_raw<std::uint32_t>(in);
    if (in.size() < len) throw std::runtime_error("batch log: truncated key");
    log.keys_.emplace_back(in.substr(0, len));
    in.remove_prefix(len);
  }
  auto ncells = take_raw<std::uint64_t>(in);
  // Divided, not multiplied: a huge count must not wrap around to the size.
  if (in.size() % sizeof(Cell) != 0 || ncells != in.size() / sizeof(Cell))
    throw std::runtime_error("batch log: bad cell count");
  log.cells_.resize(ncells);
  if (ncells > 0) std::memcpy(log.cells_.data(), in.data(), in.size());
  for (const auto& c : log.cells_)
    if (c.row >= log.rows_ || c.key >= nkeys) throw std::runtime_error("batch log: bad cell");
  return log;
}

// ---- History --------------------------------------------------------------

namespace {

void remember_key(std::vector<std::string>& order, const std::string& key) {
  if (std::find(order.begin(), order.end(), key) == order.end()) order.push_back(key);
}

// A count's whole number as an integer (history_key::is_count); anything
// else, NaN and infinities included, as it is.
nlohmann::json as_recorded(const std::string& key, nlohmann::json value) {
  if (!value.is_number_float() || !history_key::is_count(key)) return value;
  const double v = value.get<double>();
  constexpr double kLimit = 9007199254740992.0;  // 2^53: every integer below is a double exactly
  if (std::isfinite(v) && std::trunc(v) == v && std::fabs(v) <= kLimit) return static_cast<std::int64_t>(v);
  return value;
}

// as_recorded for the counts of an epoch and of its batch rows (a history
// read from a file written before counts were integers).
void counts_as_integers(nlohmann::json& epoch) {
  if (!epoch.is_object()) return;
  for (auto it = epoch.begin(); it != epoch.end(); ++it) {
    if (it.key() == history_key::kBatches && it->is_array()) {
      for (auto& row : *it)
        if (row.is_object())
          for (auto cell = row.begin(); cell != row.end(); ++cell) *cell = as_recorded(cell.key(), *cell);
    } else {
      *it = as_recorded(it.key(), *it);
    }
  }
}

}  // namespace

void History::new_epoch() {
  pending_.clear();
  epochs_.push_back({{history_key::kEpoch, epochs_.size() + 1}, {history_key::kBatches, nlohmann::json::array()}});
  remember_key(key_order_, history_key::kEpoch);
  remember_key(key_order_, history_key::kBatches);
}

void History::record(const std::string& key, nlohmann::json value) {
  if (epochs_.empty()) throw std::logic_error("History::record before new_epoch");
  epochs_.back()[key] = as_recorded(key, std::move(value));
  remember_key(key_order_, key);
}

const nlohmann::json& History::last() const {
  if (epochs_.empty()) throw std::logic_error("History::last on an empty history");
  return epochs_.back();
}

nlohmann::json History::get(long index, const std::string& key) const {
  long n = static_cast<long>(epochs_.size());
  if (index < 0) index += n;
  if (index < 0 || index >= n) return nullptr;
  auto it = epochs_[index].find(key);
  return it == epochs_[index].end() ? nlohmann::json() : *it;
}

namespace {
// A row's keys come in as "rank" (merged logs), then the log's keys in the
// order they were first put.
void append_rows(nlohmann::json& batches, const BatchLog& log, int rank, std::vector<std::string>& order) {
  std::size_t first = batches.size();
  for (std::uint32_t r = 0; r < log.rows(); ++r) {
    batches.push_back(nlohmann::json::object());
    if (rank >= 0) batches.back()[history_key::kRank] = rank;
  }
  if (rank >= 0) remember_key(order, history_key::kRank);
  for (const auto& k : log.keys()) remember_key(order, k);
  for (const auto& c : log.cells()) batches[first + c.row][log.keys()[c.key]] = as_recorded(log.keys()[c.key], c.value);
}
}  // namespace

void History::commit_batches() {
  if (epochs_.empty()) throw std::logic_error("History::commit_batches before new_epoch");
  append_rows(epochs_.back()[history_key::kBatches], pending_, -1, batch_key_order_);
  pending_.clear();
}

void History::commit_batches(const std::vector<BatchLog>& by_rank) {
  if (epochs_.empty()) throw std::logic_error("History::commit_batches before new_epoch");
  auto& batches = epochs_.back()[history_key::kBatches];
  for (std::size_t r = 0; r < by_rank.size(); ++r)
    append_rows(batches, by_rank[r], static_cast<int>(r), batch_key_order_);
  pending_.clear();
}

bool lower_is_better(const std::string& key) {
  auto ends_with = [&](const char* suffix) {
    const std::size_t n = std::strlen(suffix);
    return key.size() >= n && key.compare(key.size() - n, n, suffix) == 0;
  };
  return ends_with("loss") || ends_with("error");
}

nlohmann::json encode_nonfinite(const nlohmann::json& value) {
  if (value.is_number_float()) {
    double d = value.get<double>();
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    return value;
  }
  if (value.is_structured()) {
    nlohmann::json out = value.is_array() ? nlohmann::json::array() : nlohmann::json::object();
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (value.is_array())
        out.push_back(encode_nonfinite(*it));
      else
        out[it.key()] = encode_nonfinite(*it);
    }
    return out;
  }
  return value;
}

nlohmann::json decode_nonfinite(const nlohmann::json& value) {
  // One copy, decoded in place without recursion: copying each nested level
  // again costs time and memory quadratic in the depth.
  nlohmann::json out = value;
  std::vector<nlohmann::json*> todo{&out};
  while (!todo.empty()) {
    nlohmann::json& v = *todo.back();
    todo.pop_back();
    if (v.is_string()) {
      const auto& s = v.get_ref<const std::string&>();
      if (s == "NaN") v = std::numeric_limits<double>::quiet_NaN();
      else if (s == "Infinity") v = std::numeric_limits<double>::infinity();
      else if (s == "-Infinity") v = -std::numeric_limits<double>::infinity();
    } else if (v.is_structured()) {
      for (auto& child : v) todo.push_back(&child);
    }
  }
  return out;
}

namespace {

using KeyRank = std::map<std::string, std::size_t>;

KeyRank rank_of(const std::vector<std::string>& order) {
  KeyRank rank;
  for (const auto& key : order) rank.emplace(key, rank.size());
  return rank;
}

// `object` with its keys by `rank` (those it lacks last, alphabetically);
// `inner` converts each value.
template <class Inner>
nlohmann::ordered_json in_order(const nlohmann::json& object, const KeyRank& rank, const Inner& inner) {
  std::vector<std::pair<std::size_t, std::string>> keys;
  for (auto it = object.begin(); it != object.end(); ++it) {
    const auto r = rank.find(it.key());
    keys.emplace_back(r == rank.end() ? rank.size() : r->second, it.key());
  }
  std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [at, key] : keys) out[key] = inner(key, object[key]);
  return out;
}

void check_epochs(const nlohmann::json& epochs) {
  if (!epochs.is_array()) throw std::runtime_error("history: expected a JSON array of epochs");
  std::size_t n = 0;
  for (const auto& e : epochs) {
    ++n;
    if (!e.is_object()) throw std::runtime_error("history: every epoch must be a JSON object");
    if (!e.contains(history_key::kBatches) || !e[history_key::kBatches].is_array())
      throw std::runtime_error("history: epoch " + std::to_string(n) + " has no \"batches\" list");
  }
}

}  // namespace

std::string History::dump(int indent) const {
  const KeyRank epoch_rank = rank_of(key_order_), row_rank = rank_of(batch_key_order_);
  const auto plain = [](const std::string&, const nlohmann::json& v) { return nlohmann::ordered_json(v); };
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& epoch : encode_nonfinite(epochs_))
    out.push_back(in_order(epoch, epoch_rank, [&](const std::string& key, const nlohmann::json& v) {
      if (key != history_key::kBatches || !v.is_array()) return plain(key, v);
      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
      for (const auto& row : v) rows.push_back(row.is_object() ? in_order(row, row_rank, plain) : plain(key, row));
      return rows;
    }));
  return out.dump(indent);
}

void History::save(const std::string& path) const { write_file_atomic(path, dump() + "\n"); }

// The keys of an epoch and of its batch rows, in the order `epoch` lists them.
template <class Json>
void History::learn_order(const Json& epoch) {
  for (auto it = epoch.begin(); it != epoch.end(); ++it) remember_key(key_order_, it.key());
  if (const auto b = epoch.find(history_key::kBatches); b != epoch.end() && b->is_array())
    for (const auto& row : *b)
      if (row.is_object())
        for (auto it = row.begin(); it != row.end(); ++it) remember_key(batch_key_order_, it.key());
}

History History::from_json(const nlohmann::json& epochs) {
  check_epochs(epochs);
  History h;
  h.key_order_ = {history_key::kEpoch, history_key::kBatches};  // as new_epoch puts them; the rest alphabetically
  for (const auto& e : epochs) {
    h.learn_order(e);
    h.epochs_.push_back(decode_nonfinite(e));
    counts_as_integers(h.epochs_.back());
  }
  return h;
}

History History::from_json(const nlohmann::ordered_json& epochs) {
  History h = from_json(nlohmann::json(epochs));
  // Each key's first place, which nlohmann::json sorted away ("epoch" first,
  // as new_epoch puts it, even in a file of an older skein, sorted).
  h.key_order_ = {history_key::kEpoch};
  h.batch_key_order_.clear();
  for (const auto& e : epochs) h.learn_order(e);
  return h;
}

History History::first_epochs(std::size_t n) const {
  History h;
  h.key_order_ = key_order_;
  h.batch_key_order_ = batch_key_order_;
  for (std::size_t i = 0; i < n && i < epochs_.size(); ++i) h.epochs_.push_back(epochs_[i]);
  return h;
}

History History::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e400
    throw std::runtime_error(path + ": " + e.what());
  }
  try {
    return from_json(j);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

}  // namespace skein
