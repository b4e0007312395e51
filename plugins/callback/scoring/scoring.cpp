// Callback "scoring": more scores of a run, for train and valid batches.
// Per batch (recorded as batch keys; the trainer averages them over all
// samples of all ranks): <phase>_acc, <phase>_error, <phase>_top<k>_acc.
// Per epoch, from counts and sums merged over ranks (epoch_scores.hpp; not
// averaged ratios): <phase>_precision, _recall, _f1 (macro; per class too
// with per_class), _roc_auc (binary), and for regression _rmse, _mae, _r2.
// Phase: train or valid (valid_loss and valid_acc are built in). Other
// plugins extend scoring the same way: record a train_*/valid_* batch key.
#include <map>

#include <c10/util/StringUtil.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "epoch_scores.hpp"
#include "skein/callback.hpp"
#include "skein/kit/losses.hpp"
#include "skein/loss.hpp"
#include "skein/parallel.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and ScoringOptions.
#define SCORING_OPTIONS(X)                                                                  \
  X(scores, string_list, "[\"train_acc\"]",                                                 \
    "Scores to record: <phase>_ + acc, error, top<k>_acc, precision, recall, f1, roc_auc, " \
    "rmse, mae or r2 (phase: train or valid)")                                              \
  X(per_class, boolean, "false", "precision, recall, f1: also <name>_<class id> per class")

namespace {

SKEIN_OPTIONS_STRUCT(ScoringOptions, SCORING_OPTIONS)

using skein_scoring::ClassCounts;
using skein_scoring::RegressionSums;

enum class Kind { hit, precision, recall, f1, roc_auc, rmse, mae, r2 };

struct Score {
  std::string name;
  bool train = true;
  Kind kind = Kind::hit;
  long top_k = 1;      // hit: correct when the class is among the k best
  bool error = false;  // hit: record 1 - accuracy
  int key = 0;         // hit: batch key
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
    opt.fail(ScoringOptions::names::scores, "'" + name + "' must start with train_ or valid_");
  }
  static const std::map<std::string, Kind> epoch_kinds = {
      {"precision", Kind::precision}, {"recall", Kind::recall}, {"f1", Kind::f1}, {"roc_auc", Kind::roc_auc},
      {"rmse", Kind::rmse},           {"mae", Kind::mae},       {"r2", Kind::r2}};
  if (rest == "acc" && !s.train) opt.fail(ScoringOptions::names::scores, "valid_acc is built in");
  if (const auto it = epoch_kinds.find(rest); it != epoch_kinds.end()) {
    s.kind = it->second;
  } else if (rest == "error") {
    s.error = true;
  } else if (rest.rfind("top", 0) == 0 && rest.size() > 7 && rest.compare(rest.size() - 4, 4, "_acc") == 0) {
    s.top_k = std::stol(rest.substr(3, rest.size() - 7));
    if (s.top_k < 1) opt.fail(ScoringOptions::names::scores, "'" + name + "': k must be at least 1");
  } else if (rest != "acc") {
    opt.fail(ScoringOptions::names::scores, "'" + name + "' is not <phase>_ followed by acc, error, top<k>_acc, precision, recall, f1, "
                       "roc_auc, rmse, mae or r2");
  }
  return s;
}

// What one phase's epoch scores need, gathered batch by batch on this rank.
struct PhaseSums {
  bool classes = false, regression = false, auc = false;  // which are asked for
  ClassCounts counts;
  RegressionSums sums;
  std::vector<double> auc_scores, auc_labels;

  void clear() {
    counts = {};
    sums = {};
    auc_scores.clear();
    auc_labels.clear();
  }

  // This rank's sums so far, for a checkpoint written inside an epoch.
  nlohmann::json to_json() const {
    return {{"counts", counts.flat()}, {"sums", sums.flat()}, {"auc_scores", auc_scores}, {"auc_labels", auc_labels}};
  }
  void assign(const nlohmann::json& j) {
    counts.assign_flat(j.at("counts").get<std::vector<double>>());
    sums.assign_flat(j.at("sums").get<std::vector<double>>());
    auc_scores = j.at("auc_scores").get<std::vector<double>>();
    auc_labels = j.at("auc_labels").get<std::vector<double>>();
  }
};

[[noreturn]] void fail(const std::string& why) {
  throw skein::ConfigError("callback (plugin 'scoring'): " + why);
}

// Binary: one logit per sample (positive above 0, targets above 0.5).
bool binary_outputs(const torch::Tensor& outputs) {
  return outputs.dim() == 1 || (outputs.dim() == 2 && outputs.size(1) == 1);
}

// The scores asked for (of either phase) fit the model's outputs and
// targets: checked at the first batch, not first at validation.
void check_fit(const PhaseSums& train, const PhaseSums& valid, const skein::Batch& b) {
  const torch::Tensor& out = b.outputs;
  if ((train.auc || valid.auc) && !binary_outputs(out) && !(out.dim() == 2 && out.size(1) == 2))
    fail("roc_auc is for binary classification (outputs [N], [N, 1] or [N, 2]); the model outputs " +
         c10::str(out.sizes()));
  if ((train.regression || valid.regression) && b.targets.numel() != out.numel())
    fail("rmse, mae and r2 need targets of the outputs' size; outputs " + c10::str(out.sizes()) + ", targets " +
         c10::str(b.targets.sizes()));
}

void add_batch(PhaseSums& p, const skein::Batch& b) {
  const torch::Tensor& out = b.outputs;
  if (p.classes || p.auc) {
    const bool binary = binary_outputs(out);
    const torch::Tensor actual = binary ? b.targets.reshape({-1}).gt(0.5) : skein::class_ids_of(b.targets);
    if (p.classes) p.counts.add(binary ? out.reshape({-1}).gt(0) : out.argmax(1), actual, binary ? 2 : out.size(1));
    if (p.auc) {
      const torch::Tensor score = binary ? out.reshape({-1}) : out.select(1, 1) - out.select(1, 0);
      // Read on the host (the batch may be on a CUDA device).
      const auto s = score.to(torch::kCPU, torch::kFloat64).contiguous();
      const auto l = actual.reshape({-1}).to(torch::kCPU, torch::kFloat64).contiguous();
      p.auc_scores.insert(p.auc_scores.end(), s.data_ptr<double>(), s.data_ptr<double>() + s.numel());
      p.auc_labels.insert(p.auc_labels.end(), l.data_ptr<double>(), l.data_ptr<double>() + l.numel());
    }
  }
  if (p.regression) p.sums.add(out.reshape({out.size(0), -1}), b.targets.reshape({out.size(0), -1}));
}

// Sums over ranks, after making every rank's width (classes, output
// columns) the widest one's.
template <class Sums>
void merge_sums(skein::Parallel& parallel, Sums& sums, std::size_t width) {
  std::vector<double> widest = {static_cast<double>(width)};
  parallel.all_reduce_max(widest);
  sums.resize(static_cast<std::size_t>(widest[0]));
  auto flat = sums.flat();
  parallel.all_reduce_sum(flat);
  sums.assign_flat(flat);
}

// Every rank's (score, label) pairs, on every rank.
void gather_pairs(skein::TrainContext& ctx, PhaseSums& p) {
  const auto world = static_cast<std::size_t>(std::max(1, ctx.run().world_size));
  const auto rank = static_cast<std::size_t>(ctx.run().rank);
  std::vector<double> counts(world, 0);
  counts[rank] = static_cast<double>(p.auc_scores.size());
  ctx.parallel().all_reduce_sum(counts);
  std::size_t total = 0, offset = 0;
  for (std::size_t r = 0; r < world; ++r) {
    if (r == rank) offset = total;
    total += static_cast<std::size_t>(counts[r]);
  }
  std::vector<double> all(2 * total, 0);
  std::copy(p.auc_scores.begin(), p.auc_scores.end(), all.begin() + static_cast<long>(offset));
  std::copy(p.auc_labels.begin(), p.auc_labels.end(), all.begin() + static_cast<long>(total + offset));
  ctx.parallel().all_reduce_sum(all);
  p.auc_scores.assign(all.begin(), all.begin() + static_cast<long>(total));
  p.auc_labels.assign(all.begin() + static_cast<long>(total), all.end());
}

class Scoring final : public skein::Callback, public skein::EpochScorer {
 public:
  explicit Scoring(const skein::PluginArgs& args) : o_(args.options) {
    for (const auto& name : o_.scores) {
      scores_.push_back(parse(name, args.options));
      const Score& s = scores_.back();
      PhaseSums& p = phase(s.train);
      if (s.kind == Kind::precision || s.kind == Kind::recall || s.kind == Kind::f1) p.classes = true;
      if (s.kind == Kind::roc_auc) p.auc = true;
      if (s.kind == Kind::rmse || s.kind == Kind::mae || s.kind == Kind::r2) p.regression = true;
    }
  }

  void on_train_begin(skein::TrainContext& ctx) override {
    for (auto& s : scores_)
      if (s.kind == Kind::hit) s.key = ctx.history().batches().key(s.name);
  }

  void on_epoch_begin(skein::TrainContext&) override {
    train_.clear();
    valid_.clear();
  }

  void on_batch_end(skein::TrainContext& ctx, const skein::Batch& b) override {
    torch::NoGradGuard no_grad;
    for (const auto& s : scores_) {
      if (s.train != b.training || s.kind != Kind::hit) continue;
      const auto k = std::min<std::int64_t>(s.top_k, b.outputs.size(1));
      const auto top = std::get<1>(b.outputs.topk(k, 1));
      const double hit = top.eq(skein::class_ids_of(b.targets).unsqueeze(1)).any(1).to(torch::kFloat64).mean().item<double>();
      ctx.history().batches().put(s.key, s.error ? 1 - hit : hit);
    }
    if (!checked_) {
      check_fit(train_, valid_, b);
      checked_ = true;
    }
    add_batch(phase(b.training), b);
  }

  void on_epoch_scored(skein::TrainContext& ctx) override {
    for (const bool train : {true, false}) {
      PhaseSums& p = phase(train);
      // Collectives: every rank takes the same branches (the options decide).
      if (p.classes) merge_sums(ctx.parallel(), p.counts, p.counts.tp.size());
      if (p.regression) merge_sums(ctx.parallel(), p.sums, p.sums.n.size());
      if (p.auc) gather_pairs(ctx, p);
    }
    for (const auto& s : scores_)
      if (s.kind != Kind::hit) record(ctx, s);
    train_.clear();  // recorded: a checkpoint at the epoch's end need not carry them
    valid_.clear();
  }

  // Inside an epoch (a step checkpoint) the sums hold the epoch so far, of
  // this rank: the trainer keeps each rank's state of an open epoch.
  nlohmann::json state() const override { return {{"train", train_.to_json()}, {"valid", valid_.to_json()}}; }
  void load_state(const nlohmann::json& s) override {
    train_.assign(s.at("train"));
    valid_.assign(s.at("valid"));
  }

 private:
  PhaseSums& phase(bool train) { return train ? train_ : valid_; }

  void record(skein::TrainContext& ctx, const Score& s) {
    PhaseSums& p = phase(s.train);
    auto& history = ctx.history();
    switch (s.kind) {
      case Kind::roc_auc: history.record(s.name, skein_scoring::roc_auc(p.auc_scores, p.auc_labels)); return;
      case Kind::rmse: history.record(s.name, p.sums.rmse()); return;
      case Kind::mae: history.record(s.name, p.sums.mae()); return;
      case Kind::r2: history.record(s.name, p.sums.r2()); return;
      default: break;
    }
    const auto scores = p.counts.scores();
    double macro = scores.macro_f1;
    const std::vector<double>* per_class = &scores.f1;
    if (s.kind == Kind::precision) macro = scores.macro_precision, per_class = &scores.precision;
    if (s.kind == Kind::recall) macro = scores.macro_recall, per_class = &scores.recall;
    history.record(s.name, macro);
    if (!o_.per_class) return;
    for (std::size_t c = 0; c < per_class->size(); ++c)
      if (scores.present[c]) history.record(s.name + "_" + std::to_string(c), (*per_class)[c]);
  }

  std::vector<Score> scores_;
  ScoringOptions o_;
  bool checked_ = false;  // check_fit ran
  PhaseSums train_, valid_;
};

}  // namespace

SKEIN_PLUGIN(Scoring, callback, "scoring", "1.3.0",
             "More scores: per batch (acc, error, top<k>_acc) and per epoch from counts merged over ranks "
             "(precision, recall, f1, roc_auc, rmse, mae, r2)",
             SKEIN_OPTION_SPECS(SCORING_OPTIONS))
