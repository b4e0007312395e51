// Callback "jsonl": appends one JSON object per epoch (the epoch's values
// without its batches) to <run_dir>/metrics.jsonl, and optionally one per
// batch. Main rank only; each line is flushed as written.
#include <fstream>

#include "skein/callback.hpp"
#include "skein/plugin.hpp"

namespace {

class Jsonl final : public skein::Callback {
 public:
  explicit Jsonl(const skein::PluginArgs& args)
      : file_(args.options.get_string("file")), batches_(args.options.get_bool("batches")) {
    if (file_.empty()) args.options.fail("file", "must name a file");
  }

  void on_train_begin(skein::TrainContext& ctx) override {
    if (!ctx.run().is_main()) return;
    const std::string path = file_[0] == '/' ? file_ : ctx.run().run_dir + "/" + file_;
    out_.open(path, std::ios::app);
    if (!out_) throw std::runtime_error("jsonl: cannot open " + path);
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

 private:
  void write(const nlohmann::json& line) {
    out_ << skein::encode_nonfinite(line).dump() << '\n';
    out_.flush();
  }

  std::string file_;
  bool batches_;
  std::ofstream out_;
};

}  // namespace

SKEIN_PLUGIN(Jsonl, callback, "jsonl", "1.0.0",
             "Appends each epoch's values (and optionally each batch's) to metrics.jsonl",
             SKEIN_OPTION("file", string, "\"metrics.jsonl\"", "File, relative to the run directory"),
             SKEIN_OPTION("batches", boolean, "false", "Also write one line per batch (before its epoch's)"))
