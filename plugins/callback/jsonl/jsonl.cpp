// Callback "jsonl": appends one JSON object per epoch (the epoch's values
// without its batches) to <run_dir>/metrics.jsonl, and optionally one per
// batch. Main rank only; each line is flushed as written.
#include <cerrno>
#include <cstring>
#include <fstream>

#include "skein/callback.hpp"
#include "skein/plugin.hpp"
#include "skein/run_output.hpp"

namespace {

class Jsonl final : public skein::Callback {
 public:
  explicit Jsonl(const skein::PluginArgs& args)
      : path_(skein::run_output_path(args.options, "file", args.run)), batches_(args.options.get_bool("batches")) {}

  void on_train_begin(skein::TrainContext& ctx) override {
    if (!ctx.run().is_main()) return;
    out_.open(path_, std::ios::app);
    if (!out_) throw std::runtime_error("jsonl: cannot open " + path_ + ": " + std::strerror(errno));
  }

  void on_epoch_end(skein::TrainContext& ctx) override {
    if (!out_.is_open()) return;
    const auto& epoch = ctx.history().last();
    if (batches_) {
      long index = 0;
      for (const auto& b : epoch.at("batches")) {
        nlohmann::json line = b;
        line["epoch"] = epoch.at("epoch");
        line["batch"] = index++;
        write(line);
      }
    }
    nlohmann::json line = epoch;
    line.erase("batches");
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
  bool batches_;
  std::ofstream out_;
};

}  // namespace

SKEIN_PLUGIN(Jsonl, callback, "jsonl", "1.0.0",
             "Appends each epoch's values (and optionally each batch's) to metrics.jsonl",
             SKEIN_OPTION("file", string, "\"metrics.jsonl\"", "File, relative to the run directory"),
             SKEIN_OPTION("batches", boolean, "false", "Also write one line per batch (before its epoch's)"))
