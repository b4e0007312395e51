// Callback "scoring": more per-batch scores of classification, recorded as
// batch keys; the trainer turns every train_* / valid_* batch key into an
// epoch value (sample-weighted mean over all ranks). Names: <phase>_acc,
// <phase>_error, <phase>_top<k>_acc, phase train or valid (valid_loss and
// valid_acc are built in). Other plugins extend scoring the same way: record
// a train_*/valid_* batch key.
#include <torch/torch.h>

#include "skein/callback.hpp"
#include "skein/loss.hpp"
#include "skein/plugin.hpp"

namespace {

struct Score {
  std::string name;
  bool train = true;
  long top_k = 1;
  bool error = false;
  int key = 0;
};

Score parse(const std::string& name, const skein::Options& opt) {
  Score s;
  s.name = name;
  std::string rest;
  if (name.rfind("train_", 0) == 0) {
    rest = name.substr(6);
  } else if (name.rfind("valid_", 0) == 0) {
    s.train = false;
    rest = name.substr(6);
  } else {
    opt.fail("scores", "'" + name + "' must start with train_ or valid_");
  }
  if (rest == "acc" && !s.train) opt.fail("scores", "valid_acc is built in");
  if (rest == "error") {
    s.error = true;
  } else if (rest.rfind("top", 0) == 0 && rest.size() > 7 && rest.compare(rest.size() - 4, 4, "_acc") == 0) {
    s.top_k = std::stol(rest.substr(3, rest.size() - 7));
    if (s.top_k < 1) opt.fail("scores", "'" + name + "': k must be at least 1");
  } else if (rest != "acc") {
    opt.fail("scores", "'" + name + "' is not <phase>_acc, <phase>_error or <phase>_top<k>_acc");
  }
  return s;
}

class Scoring final : public skein::Callback {
 public:
  explicit Scoring(const skein::PluginArgs& args) {
    for (const auto& name : args.options.get_string_list("scores")) scores_.push_back(parse(name, args.options));
  }

  void on_train_begin(skein::TrainContext& ctx) override {
    for (auto& s : scores_) s.key = ctx.history().batches().key(s.name);
  }

  void on_batch_end(skein::TrainContext& ctx, const skein::Batch& b) override {
    torch::NoGradGuard no_grad;
    for (const auto& s : scores_) {
      if (s.train != b.training) continue;
      const auto k = std::min<std::int64_t>(s.top_k, b.outputs.size(1));
      const auto top = std::get<1>(b.outputs.topk(k, 1));
      const double hit = top.eq(skein::class_ids_of(b.targets).unsqueeze(1)).any(1).to(torch::kFloat64).mean().item<double>();
      ctx.history().batches().put(s.key, s.error ? 1 - hit : hit);
    }
  }

 private:
  std::vector<Score> scores_;
};

}  // namespace

SKEIN_PLUGIN(Scoring, callback, "scoring", "1.1.0",
             "More scores per batch (train_acc, *_error, *_top<k>_acc), merged over ranks",
             SKEIN_OPTION("scores", string_list, "[\"train_acc\"]",
                          "Scores to record: <phase>_acc, <phase>_error, <phase>_top<k>_acc"))
