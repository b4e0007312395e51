// Parallel wrapper "zero": data parallel with the optimizer's state sharded
// across ranks (ZeRO; PyTorch's ZeroRedundancyOptimizer). Every rank holds
// the whole model; each parameter has one owner (partition.hpp), and each
// rank's optimizer steps and keeps state for its own parameters only (the
// engine makes it so: skein::ShardedOptimizer). After a step every owner
// broadcasts its updated parameters.
//   stage 1: gradients are averaged on every rank, as ddp does;
//   stage 2: each bucket of gradients is reduced to its owner alone, and
//            the other ranks drop theirs; the owner's gradient of a
//            parameter alone in its bucket is dropped after the step.
// The user's module is never wrapped. Checkpoints hold the whole optimizer,
// consolidated by the engine: a zero checkpoint resumes under ddp and back.
#include <torch/types.h>
#include <torch/utils.h>

#include "../common/group_parallel.hpp"
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
  SKEIN_PROCESS_GROUP_OPTIONS(X)

namespace {

SKEIN_OPTIONS_STRUCT(ZeroOptions, ZERO_OPTIONS)

class Zero final : public skein_parallel::GroupParallel, public skein::ShardedOptimizer {
 public:
  explicit Zero(const skein::PluginArgs& args)
      : GroupParallel("zero"), o_(args.options), rank_(args.run.rank), world_(args.run.world_size) {
    group_ = skein_parallel::make_group(args, who_, {o_.backend, o_.gloo_host, ZeroOptions::names::backend});
  }

  void prepare(torch::nn::Module& model) override {
    params_ = model.parameters();
    std::vector<std::int64_t> sizes;
    for (const auto& p : params_) sizes.push_back(p.numel());
    owners_ = skein_zero::greedy_owners(sizes, world_);
    owned_by_.assign(static_cast<std::size_t>(world_), {});
    for (std::size_t i = 0; i < params_.size(); ++i)
      owned_by_[static_cast<std::size_t>(owners_[i])].push_back(params_[i]);
    if (!group_) return;
    skein_parallel::broadcast_from_rank0(group_, model);
    skein_parallel::ReducerOptions reducer = skein_parallel::ReducerOptions::buckets_of(o_);
    reducer.who = who_;
    std::vector<torch::Tensor> trainable;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (!params_[i].requires_grad()) continue;
      trainable.push_back(params_[i]);
      if (o_.stage == 2) reducer.owners.push_back(owners_[i]);
    }
    reducer_ = std::make_unique<skein_parallel::GradientReducer>(group_, trainable, reducer);
  }

  std::vector<int> parameter_owners(const std::vector<torch::Tensor>& params) override {
    bool same = params.size() == params_.size();
    for (std::size_t i = 0; same && i < params.size(); ++i) same = params[i].is_same(params_[i]);
    if (!same) throw std::logic_error("zero: parameter_owners was asked about other parameters than prepare() saw");
    return owners_;
  }

  // Each owner's parameters to every rank, one owner after the other; then
  // the gradients this rank's optimizer does not clear are dropped.
  void after_step() override {
    torch::NoGradGuard no_grad;
    if (group_)
      skein_parallel::collective(who_, "parameter broadcast", [&] {
        for (int r = 0; r < world_; ++r)
          if (!owned_by_[static_cast<std::size_t>(r)].empty())
            skein_parallel::broadcast_in_place(group_, owned_by_[static_cast<std::size_t>(r)], r);
      });
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (owners_[i] != rank_ && params_[i].grad().defined()) params_[i].mutable_grad() = torch::Tensor();
    // Stage 2: a large parameter's gradient is autograd's own tensor, made again by the next backward.
    if (reducer_ && o_.stage == 2) reducer_->drop_borrowed_gradients();
  }

 private:
  ZeroOptions o_;
  int rank_, world_;
  std::vector<torch::Tensor> params_;  // the model's, in parameters() order
  std::vector<int> owners_;            // the owner of each
  std::vector<std::vector<torch::Tensor>> owned_by_;  // each rank's parameters
};

}  // namespace

SKEIN_PLUGIN(Zero, parallel, "zero", "1.0.0",
             "Data parallel with the optimizer's state sharded across ranks (ZeRO stage 1 or 2; Gloo on the CPU, "
             "NCCL on CUDA; compiled in: " SKEIN_DISTRIBUTED_BACKENDS ")",
             SKEIN_OPTION_SPECS(ZERO_OPTIONS))
