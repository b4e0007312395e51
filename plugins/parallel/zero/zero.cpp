// Parallel wrapper "zero": data parallel with the optimizer's state sharded
// across ranks (ZeRO). Every rank holds the whole model; the parameters laid
// end to end are cut in W runs, one per rank (partition.hpp: with an
// elementwise optimizer, DeepSpeed's flat partition, a large parameter in
// parts; else each parameter whole, as PyTorch's ZeroRedundancyOptimizer),
// and each rank's optimizer steps and keeps state for its own run only (the
// engine makes it so: skein::ShardedInSpans). After a step every owner
// broadcasts its updated spans.
//   stage 1: gradients are averaged on every rank, as ddp does;
//   stage 2: each bucket of gradients is reduced to its owner alone, and
//            the other ranks drop theirs; the owner's gradient of a
//            parameter alone in its bucket is dropped after the step. A
//            parameter in parts is all-reduced, for each of its owners.
// The user's module is never wrapped. Checkpoints hold the whole optimizer,
// consolidated by the engine: a zero checkpoint resumes under ddp and back.
// With live recovery each membership has its own partition (the engine asks
// for the spans again after regroup), and the engine keeps every shard's
// state on two ranks (optimizer_mirror.hpp), so that a lost rank's is not
// lost with it.
#include <torch/types.h>
#include <torch/utils.h>

#include "../common/live_group.hpp"
#include "partition.hpp"
#include "skein/parallel.hpp"
#include "skein/plugin.hpp"
#include "skein/torch_compat/backends.hpp"

// Declared once: the schema and ZeroOptions.
#define ZERO_OPTIONS(X)                                                                                \
  X(stage, integer, "1",                                                                              \
    "1: optimizer state sharded, gradients all-reduced; 2: also each gradient reduced to its "          \
    "owner alone, the others dropped (callbacks' on_grad_computed then sees only this rank's)",       \
    SKEIN_RANGE("[1, 2]"))                                                                            \
  SKEIN_BUCKET_OPTIONS(X)                                                                             \
  SKEIN_LIVE_RECOVERY_OPTIONS(X)                                                                      \
  SKEIN_PROCESS_GROUP_OPTIONS(X)

namespace {

SKEIN_OPTIONS_STRUCT(ZeroOptions, ZERO_OPTIONS)

class Zero final : public skein_parallel::LiveGroupParallel,
                   public skein::ShardedOptimizer,
                   public skein::ShardedInSpans {
 public:
  explicit Zero(const skein::PluginArgs& args)
      : LiveGroupParallel("zero"), o_(args.options), rank_(args.run.rank), world_(args.run.world_size) {
    // Stage 2 reduces each gradient to its owner alone: a rank that also
    // steps another's shard (live recovery's mirror) would not have it.
    if (o_.live_recovery && o_.stage == 2)
      args.options.fail(ZeroOptions::names::live_recovery, "needs stage 1 (stage 2 keeps each gradient on its owner alone)");
    make_groups(args, {o_.backend, o_.gloo_host, ZeroOptions::names::backend, o_.broadcast_buffers},
                skein_parallel::live_recovery_of(o_));
  }

  void prepare(torch::nn::Module& model) override {
    params_ = model.parameters();
    attach(model);
    if (o_.stage == 1) make_reducer();  // stage 2's buckets follow the owners: made by parameter_spans
  }

  std::vector<skein::ParameterSpan> parameter_spans(const std::vector<torch::Tensor>& params, bool cut) override {
    check_same(params);
    const std::vector<std::int64_t> sizes = sizes_of_params();
    std::vector<bool> cuttable;
    for (const auto& p : params_) cuttable.push_back(cut && p.is_contiguous());
    spans_ = cut ? skein_zero::flat_spans(sizes, cuttable, world_)
                 : skein_zero::whole(sizes, skein_zero::greedy_owners(sizes, world_));
    // Each parameter's owner, or kEveryRank where it is in parts; and whether this rank owns any of it.
    owner_.assign(params_.size(), -1);
    mine_.assign(params_.size(), false);
    for (const auto& span : spans_) {
      auto& owner = owner_[span.param];
      owner = span.offset == 0 && span.length == sizes[span.param] ? span.owner : skein_parallel::kEveryRank;
      if (span.owner == rank_) mine_[span.param] = true;
    }
    if (o_.stage == 2) make_reducer();
    return spans_;
  }

  // The owner of each parameter's first element (parameter_spans' partition,
  // or the whole-parameter one when it was not asked).
  std::vector<int> parameter_owners(const std::vector<torch::Tensor>& params) override {
    check_same(params);
    if (spans_.empty()) return skein_zero::greedy_owners(sizes_of_params(), world_);
    std::vector<int> owners(params_.size(), 0);
    for (auto it = spans_.rbegin(); it != spans_.rend(); ++it) owners[it->param] = it->owner;
    return owners;
  }

  // Each owner's spans to every rank, one owner after the other; then the
  // gradients of parameters this rank owns none of are dropped.
  void after_step() override {
    torch::NoGradGuard no_grad;
    if (group_)
      skein_parallel::collective(who_, "parameter broadcast", [&] {
        for (int r = 0; r < world_; ++r) {
          const auto owned = owned_by(r);
          if (!owned.empty()) skein_parallel::broadcast_in_place(group_, owned, r);
        }
      });
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (!mine_[i] && params_[i].grad().defined()) params_[i].mutable_grad() = torch::Tensor();
    // Stage 2: a large parameter's gradient is autograd's own tensor, made again by the next backward.
    if (reducer_ && o_.stage == 2) reducer_->drop_borrowed_gradients();
  }

 private:
  // The engine asks for the new membership's spans next (parameter_spans).
  void world_changed(const skein::WorldChange& change) override {
    rank_ = change.rank;
    world_ = change.world_size;
  }

  std::vector<std::int64_t> sizes_of_params() const {
    std::vector<std::int64_t> sizes;
    for (const auto& p : params_) sizes.push_back(p.numel());
    return sizes;
  }

  void check_same(const std::vector<torch::Tensor>& params) const {
    bool same = params.size() == params_.size();
    for (std::size_t i = 0; same && i < params.size(); ++i) same = params[i].is_same(params_[i]);
    if (!same) throw std::logic_error("zero: asked about other parameters than prepare() saw");
  }

  // Rank r's spans as tensors over the parameters' storage: made at every
  // step, as a checkpoint's restore may give a parameter other storage.
  std::vector<torch::Tensor> owned_by(int r) const {
    std::vector<torch::Tensor> out;
    for (const auto& span : spans_) {
      if (span.owner != r || span.length == 0) continue;
      const auto& p = params_[span.param];
      out.push_back(span.length == p.numel() ? p : p.view({-1}).narrow(0, span.offset, span.length));
    }
    return out;
  }

  void make_reducer() {
    if (!group_) return;
    skein_parallel::ReducerOptions reducer = skein_parallel::ReducerOptions::buckets_of(o_);
    reducer.who = who_;
    std::vector<torch::Tensor> trainable;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (!params_[i].requires_grad()) continue;
      trainable.push_back(params_[i]);
      if (o_.stage == 2) reducer.owners.push_back(owner_[i]);
    }
    reducer_ = std::make_unique<skein_parallel::GradientReducer>(group_, trainable, reducer);
  }

  ZeroOptions o_;
  int rank_, world_;
  std::vector<torch::Tensor> params_;      // the model's, in parameters() order
  std::vector<skein::ParameterSpan> spans_;  // who owns what of them
  std::vector<int> owner_;                 // each one's owner, or kEveryRank when in parts
  std::vector<bool> mine_;                 // whether this rank owns any of each
};

}  // namespace

SKEIN_PLUGIN(Zero, parallel, "zero", "1.3.0",
             "Data parallel with the optimizer's state sharded across ranks (ZeRO stage 1 or 2; Gloo on the CPU, "
             "NCCL on CUDA; compiled in: " SKEIN_DISTRIBUTED_BACKENDS ")",
             SKEIN_OPTION_SPECS(ZERO_OPTIONS))
