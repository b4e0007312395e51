#include "skein/history.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
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

void History::new_epoch() {
  pending_.clear();
  epochs_.push_back({{history_key::kEpoch, epochs_.size() + 1}, {history_key::kBatches, nlohmann::json::array()}});
}

void History::record(const std::string& key, nlohmann::json value) {
  if (epochs_.empty()) throw std::logic_error("History::record before new_epoch");
  epochs_.back()[key] = std::move(value);
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
void append_rows(nlohmann::json& batches, const BatchLog& log, int rank) {
  std::size_t first = batches.size();
  for (std::uint32_t r = 0; r < log.rows(); ++r) {
    batches.push_back(nlohmann::json::object());
    if (rank >= 0) batches.back()[history_key::kRank] = rank;
  }
  for (const auto& c : log.cells()) batches[first + c.row][log.keys()[c.key]] = c.value;
}
}  // namespace

void History::commit_batches() {
  if (epochs_.empty()) throw std::logic_error("History::commit_batches before new_epoch");
  append_rows(epochs_.back()[history_key::kBatches], pending_, -1);
  pending_.clear();
}

void History::commit_batches(const std::vector<BatchLog>& by_rank) {
  if (epochs_.empty()) throw std::logic_error("History::commit_batches before new_epoch");
  auto& batches = epochs_.back()[history_key::kBatches];
  for (std::size_t r = 0; r < by_rank.size(); ++r)
    append_rows(batches, by_rank[r], static_cast<int>(r));
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

std::string History::dump(int indent) const { return encode_nonfinite(epochs_).dump(indent); }

void History::save(const std::string& path) const { write_file_atomic(path, dump() + "\n"); }

History History::from_json(const nlohmann::json& epochs) {
  if (!epochs.is_array()) throw std::runtime_error("history: expected a JSON array of epochs");
  History h;
  for (const auto& e : epochs) {
    if (!e.is_object()) throw std::runtime_error("history: every epoch must be a JSON object");
    if (!e.contains(history_key::kBatches) || !e[history_key::kBatches].is_array())
      throw std::runtime_error("history: epoch " + std::to_string(h.epochs_.size() + 1) +
                               " has no \"batches\" list");
    h.epochs_.push_back(decode_nonfinite(e));
  }
  return h;
}

History History::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
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
