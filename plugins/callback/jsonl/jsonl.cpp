// Callback "jsonl": appends one JSON object per epoch (the epoch's values
// without its batches) to <run_dir>/metrics.jsonl, and optionally one per
// batch. Main rank only; each line is flushed as written. On a resume the
// file first loses what the checkpoint does not cover (see drop_lines_after).
#include <cerrno>
#include <cstring>
#include <fstream>

#include "skein/io/atomic_file.hpp"
#include "skein/callback.hpp"
#include "skein/history.hpp"
#include "skein/plugin.hpp"
#include "skein/run.hpp"

// Declared once: the schema and JsonlOptions.
#define JSONL_OPTIONS(X)                                                             \
  X(file, string, "\"metrics.jsonl\"", "File, relative to the run directory")        \
  X(batches, boolean, "false", "Also write one line per batch (before its epoch's)")

namespace {

SKEIN_OPTIONS_STRUCT(JsonlOptions, JSONL_OPTIONS)

// A resumed run trains again every epoch after its checkpoint's, and those
// epochs may already be in the file (a checkpoint every N epochs, or a kill
// between an epoch's end and its checkpoint): their lines go, so that each
// epoch is in the file once, as the resumed history has it. Lines of batches
// carry their epoch and go with it. A line that is not a complete JSON object
// with an integer "epoch" (the last line cut short by a kill) goes too.
void drop_lines_after(const std::string& path, long last_epoch) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return;  // nothing written yet
    throw std::runtime_error("jsonl: cannot read " + path + ": " + std::strerror(errno));
  }
  std::string kept, line;
  bool dropped = false;
  while (std::getline(in, line)) {
    const bool complete = !in.eof();  // ended by '\n'
    const auto j = nlohmann::json::parse(line, nullptr, false);
    const bool covered = complete && j.is_object() && j.contains("epoch") && j["epoch"].is_number_integer() &&
                         j["epoch"].get<long>() <= last_epoch;
    if (covered) kept += line + '\n';
    dropped = dropped || !covered;
  }
  if (in.bad()) throw std::runtime_error("jsonl: cannot read " + path + ": " + std::strerror(errno));
  if (dropped) skein::write_file_atomic(path, kept);
}

class Jsonl final : public skein::Callback, public skein::EpochReporter {
 public:
  explicit Jsonl(const skein::PluginArgs& args)
      : path_(skein::run_output_path(args.options, JsonlOptions::names::file, args.run)), o_(args.options) {}

  void on_train_begin(skein::TrainContext& ctx) override {
    if (!ctx.run().is_main()) return;
    // A resume: the history restored from the checkpoint is what the file keeps.
    if (!ctx.history().empty()) drop_lines_after(path_, ctx.history().last().at("epoch").get<long>());
    out_.open(path_, std::ios::app);
    if (!out_) throw std::runtime_error("jsonl: cannot open " + path_ + ": " + std::strerror(errno));
  }

  // After every on_epoch_end: keys other callbacks add (lr, train_dur) are in.
  void on_epoch_recorded(skein::TrainContext& ctx) override {
    if (!out_.is_open()) return;
    const auto& epoch = ctx.history().last();
    if (o_.batches) {
      long index = 0;
      for (const auto& b : epoch.at(skein::history_key::kBatches)) {
        nlohmann::json line = b;
        line[skein::history_key::kEpoch] = epoch.at(skein::history_key::kEpoch);
        line["batch"] = index++;
        write(line);
      }
    }
    nlohmann::json line = epoch;
    line.erase(skein::history_key::kBatches);
    write(line);
  }

  // Every line is flushed already; closing makes the file whole for readers.
  void on_train_end(skein::TrainContext&) override { out_.close(); }
  void on_exception(skein::TrainContext&, const std::string&) override { out_.close(); }

 private:
  void write(const nlohmann::json& line) {
    out_ << skein::encode_nonfinite(line).dump() << '\n';
    out_.flush();
    // A full disk must stop the run, not leave a metrics file that silently ends early.
    if (!out_) throw std::runtime_error("jsonl: cannot write " + path_ + ": " + std::strerror(errno));
  }

  std::string path_;
  JsonlOptions o_;
  std::ofstream out_;
};

}  // namespace

SKEIN_PLUGIN(Jsonl, callback, "jsonl", "1.2.0",
             "Appends each epoch's values (and optionally each batch's) to metrics.jsonl",
             SKEIN_OPTION_SPECS(JSONL_OPTIONS))
