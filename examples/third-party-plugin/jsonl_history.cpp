// A history backend: each rank appends its epoch's batch records, one JSON line
// per epoch, to a file of its own in the run directory (history_ranks/rank<R>.jsonl);
// once every rank has written (they count themselves through the run's store),
// every rank reads all ranks' lines of the epoch, so all hold the same history.
//
// What any backend must get right (docs/plugin-authoring.md, "history"):
// - key records on the epoch being synced, history.size() (1, 2, ...; a
//   resumed run continues the count) AND on run.run_id: a restarted or resumed
//   attempt gets a new id, and must not read the lines (or store keys) a killed
//   attempt left for the same epoch;
// - waits are bounded by run.timeout_s, so a rank that died fails the others;
// - args.store may be null: one process has nothing to sync.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <skein/errors.hpp>
#include <skein/history.hpp>
#include <skein/history_backend.hpp>
#include <skein/io/store.hpp>
#include <skein/plugin.hpp>
#include <skein/run.hpp>
#include <skein/run_store.hpp>

namespace {

// One rank's batch records of an epoch as JSON rows ({"key": value, ...}; a
// NaN or infinity as Skein writes them in history.json), and back.
nlohmann::json rows_of(const skein::BatchLog& log) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::uint32_t i = 0; i < log.rows(); ++i) rows.push_back(nlohmann::json::object());
  for (const auto& cell : log.cells()) rows[cell.row][log.keys()[cell.key]] = skein::encode_nonfinite(cell.value);
  return rows;
}

skein::BatchLog log_of(const nlohmann::json& rows) {
  skein::BatchLog log;
  for (const auto& row : rows) {
    log.new_row();
    for (const auto& [key, value] : row.items()) log.put(log.key(key), skein::decode_nonfinite(value).get<double>());
  }
  return log;
}

// A rank's file: lines appended by this rank, read by every rank.
class RankFile {
 public:
  explicit RankFile(std::string path) : path_(std::move(path)) {}

  void append(const nlohmann::json& line) {
    std::ofstream out(path_, std::ios::binary | std::ios::app);
    // A killed attempt may have left half a line: ours starts on a line of its own.
    out << (ends_torn() ? "\n" : "") << line.dump() << '\n';
    out.flush();
    if (!out) throw std::runtime_error("jsonl_history: cannot write " + path_);
  }

  // The line of `epoch` of run `run_id`: the last one, as every rank has
  // written it (a launcher that reuses a run id, torchrun run again with the
  // same --rdzv-id, leaves earlier ones). Searched from after the line found
  // last time; other runs' lines and torn ones are skipped.
  nlohmann::json find(const std::string& run_id, long epoch) {
    std::ifstream in(path_, std::ios::binary);
    in.seekg(read_from_);
    nlohmann::json found;
    std::streamoff after = read_from_;
    for (std::string text; std::getline(in, text);) {
      auto line = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (line.is_object() && line.value("run", "") == run_id && line.value("epoch", 0L) == epoch) {
        found = std::move(line);
        after = in.tellg();
      }
    }
    if (found.is_null())
      throw std::runtime_error("jsonl_history: " + path_ + " holds no line of epoch " + std::to_string(epoch) +
                               " of run " + run_id);
    read_from_ = after;
    return found;
  }

 private:
  bool ends_torn() const {
    std::ifstream in(path_, std::ios::binary | std::ios::ate);
    if (!in || in.tellg() <= 0) return false;
    in.seekg(-1, std::ios::end);
    return in.get() != '\n';
  }

  std::string path_;
  std::streamoff read_from_ = 0;
};

class JsonlHistory final : public skein::HistoryBackend {
 public:
  explicit JsonlHistory(const skein::PluginArgs& args) : run_(args.run) {
    const std::string dir = skein::run_output_dir(args.options, "dir", run_);
    std::filesystem::create_directories(dir);
    // Every rank names every rank's file: rank 0 records them all as the
    // run's outputs (for --overwrite), and each rank reads them all.
    for (int r = 0; r < run_.world_size; ++r)
      files_.emplace_back(skein::run_output_path(run_, dir + "/rank" + std::to_string(r) + ".jsonl",
                                                 args.options.owner() + ": rank file"));
    if (run_.world_size == 1) return;
    if (!args.store || !*args.store)
      throw skein::ConfigError(args.options.owner() + ": " + std::to_string(run_.world_size) +
                               " ranks need the run's store to agree when all have written");
    // This run's keys only, apart from a killed attempt's and other plugins'.
    store_ = c10::make_intrusive<c10d::PrefixStore>("jsonl_history/" + run_.run_id, args.store->store);
  }

  void sync_epoch(skein::History& history) override {
    const long epoch = static_cast<long>(history.size());  // the epoch being synced, 1-based
    const nlohmann::json line = {{"run", run_.run_id}, {"epoch", epoch}, {"rows", rows_of(history.batches())}};
    files_[run_.rank].append(line);
    if (run_.world_size == 1) {
      history.commit_batches();
      return;
    }
    const int world = run_.world_size;
    const std::string e = "e" + std::to_string(epoch) + "/";
    // The last rank to write says so; everyone waits for that, at most timeout_s.
    if (store_->add(e + "written", 1) == world) skein::store_set(*store_, e + "all", "1");
    store_->wait({e + "all"}, skein::to_millis(run_.timeout_s));
    std::vector<skein::BatchLog> logs;
    for (int r = 0; r < world; ++r)
      logs.push_back(r == run_.rank ? log_of(line["rows"]) : log_of(files_[r].find(run_.run_id, epoch)["rows"]));
    history.commit_batches(logs);
    // The last rank to read removes the epoch's keys: the store holds none of a finished epoch.
    if (store_->add(e + "read", 1) == world)
      for (const char* key : {"written", "all", "read"}) store_->deleteKey(e + key);
  }

  // Nothing to release: the files are closed after every line, and no key
  // outlives its epoch. (A backend holding a connection or keys closes them
  // here; close() runs once on every rank, after on_train_end.)
  void close() override {}

  // Every rank ends with the same history: the end-of-run check compares them.
  bool synchronizes_ranks() const override { return true; }

 private:
  skein::RunInfo run_;
  std::vector<RankFile> files_;
  c10::intrusive_ptr<c10d::Store> store_;  // null on one rank
};

}  // namespace

SKEIN_PLUGIN(JsonlHistory, history, "jsonl_history", "1.0.0",
             "History of all ranks merged each epoch through one JSON-lines file per rank",
             SKEIN_OPTION("dir", string, "\"history_ranks\"", "Folder of the rank files, in the run directory"))
