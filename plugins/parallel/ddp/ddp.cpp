// Parallel wrapper "ddp": data parallel over a c10d process group (Gloo on
// the CPU, NCCL for CUDA tensors where libtorch has it). Parameters and buffers start equal (broadcast from rank 0); gradients
// are averaged by GradientReducer during backward. The user's module is never
// wrapped: ctx.model<T>() is the same object as in a single-process run.
#include <cstring>

#include <torch/types.h>

#include "../common/group_parallel.hpp"
#include "skein/parallel.hpp"
#include "skein/plugin.hpp"
#include "skein/torch_compat/backends.hpp"

// Declared once: the schema and DdpOptions.
#define DDP_OPTIONS(X)                                                                                 \
  SKEIN_BUCKET_OPTIONS(X)                                                                             \
  X(compression, choice, "\"none\"",                                                                \
    "none; fp16: gradients travel as float16, half the bytes, but Gloo sums "                         \
    "float16 in scalar code (all-reduce of 235k values 5.5 ms vs 2.4 ms as "                          \
    "float32 here), so it pays only on links slower than ~2.5 Gbit/s; "                               \
    "powersgd: float32 matrices travel as rank-r factors with error feedback "                        \
    "(PowerSGD), the rest uncompressed (docs/BENCHMARKS.md, section 9)",                              \
    SKEIN_CHOICES("none|fp16|powersgd"))                                                              \
  X(powersgd_rank, integer, "4", "powersgd: rank r of the approximation", SKEIN_RANGE("[1, 1024]"))  \
  X(powersgd_warmup_steps, integer, "100",                                                            \
    "powersgd: optimizer steps all-reduced uncompressed before compression starts",                   \
    SKEIN_RANGE("[0, )"))                                                                             \
  X(live_recovery, boolean, "false",                                                                  \
    "go on after a lost process without restarting the others: the survivors agree on a new group, "  \
    "take the state of the lowest surviving rank, re-shard the rest of the epoch and retry the step; "\
    "the launcher starts a replacement that joins live (docs/distributed.md, \"Live recovery\")")      \
  X(collective_timeout_s, number, "1",                                                                \
    "live_recovery: bound of one collective, within which a lost peer is found (the run's --timeout " \
    "bounds store waits)", SKEIN_RANGE("(0, 3600]"))                                                  \
  X(recovery_window_s, number, "3",                                                                   \
    "live_recovery: how long survivors wait for each other after a failure before going on without "  \
    "those not there (more than collective_timeout_s)", SKEIN_RANGE("(0, 3600]"))                     \
  X(min_ranks, integer, "1",                                                                          \
    "live_recovery: fewer ranks left than this and the run stops as without live recovery (a "        \
    "checkpoint and the launcher's --max-restarts)", SKEIN_RANGE("[1, )"))                            \
  SKEIN_PROCESS_GROUP_OPTIONS(X)

namespace {

SKEIN_OPTIONS_STRUCT(DdpOptions, DDP_OPTIONS)

class Ddp final : public skein_parallel::GroupParallel,
                  public skein::ParallelState,
                  public skein::RegroupingParallel {
 public:
  explicit Ddp(const skein::PluginArgs& args) : GroupParallel("ddp") {
    const DdpOptions o(args.options);
    reducer_options_ = skein_parallel::ReducerOptions::buckets_of(o);
    const std::string& compression = o.compression;
    reducer_options_.fp16 = compression == "fp16";
    if (compression == "powersgd") {
      skein_parallel::PowerSgdOptions powersgd;
      powersgd.rank = static_cast<int>(o.powersgd_rank);
      powersgd.warmup_steps = o.powersgd_warmup_steps;
      reducer_options_.powersgd = powersgd;
    }
    const skein_parallel::GroupOptions group{o.backend, o.gloo_host, DdpOptions::names::backend};
    live_.enabled = o.live_recovery;
    live_.collective_timeout_s = o.collective_timeout_s;
    live_.window_s = o.recovery_window_s;
    live_.min_ranks = static_cast<int>(o.min_ranks);
    if (!live_.enabled) {
      group_ = skein_parallel::make_group(args, who_, group);
      return;
    }
    // Live recovery: the engine makes each membership's group (regroup).
    if (live_.window_s <= live_.collective_timeout_s)
      args.options.fail(DdpOptions::names::recovery_window_s,
                        "must be more than collective_timeout_s, or a survivor still inside a collective is left out");
    maker_ = skein_parallel::group_maker(args, group);
    if (maker_.nccl)
      args.options.fail(DdpOptions::names::live_recovery, "is for Gloo groups; this run's backend is nccl");
    // Without the run's store: the engine's live recovery refuses the run (live_recovery.cpp).
  }

  void prepare(torch::nn::Module& model) override {
    if (!group_) return;
    skein_parallel::broadcast_from_rank0(group_, model);
    std::vector<torch::Tensor> trainable;
    for (const auto& p : model.parameters())
      if (p.requires_grad()) trainable.push_back(p);
    reducer_ = std::make_unique<skein_parallel::GradientReducer>(group_, trainable, reducer_options_);
  }

  // PowerSGD's step count, Q and this rank's error feedback (else nothing).
  std::string state() const override { return reducer_ ? reducer_->compression_state() : std::string(); }
  void load_state(const std::string& bytes) override {
    if (reducer_) reducer_->load_compression_state(bytes);
  }

  skein::LiveRecoveryOptions live_recovery() const override { return live_; }
  void drop_group() override {
    reducer_.reset();  // its hooks first, then the works over the group
    group_.reset();
  }
  void regroup(const skein::WorldChange& change, torch::nn::Module& model) override {
    drop_group();
    if (change.world_size == 1) return;  // alone: nothing to synchronise
    group_ = maker_.make(change.store_prefix + "ddp/", change.rank, change.world_size, live_.collective_timeout_s);
    prepare(model);
  }
  void broadcast_bytes(std::string& bytes, int root) override {
    if (!group_) return;
    torch::Tensor size = torch::tensor({static_cast<std::int64_t>(bytes.size())}, torch::kInt64);
    skein_parallel::broadcast_in_place(group_, {size}, root);
    torch::Tensor data = torch::empty({size.item<std::int64_t>()}, torch::kUInt8);
    if (group_->getRank() == root) std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
    skein_parallel::broadcast_in_place(group_, {data}, root);
    bytes.assign(static_cast<const char*>(data.data_ptr()), static_cast<std::size_t>(data.numel()));
  }

 private:
  skein_parallel::ReducerOptions reducer_options_;
  skein::LiveRecoveryOptions live_;
  skein_parallel::GroupMaker maker_;
};

}  // namespace

SKEIN_PLUGIN(Ddp, parallel, "ddp", "1.3.0",
             "Data parallel: bucketed all-reduce of gradients overlapped with backward (Gloo on the CPU, NCCL on CUDA; "
             "compiled in: " SKEIN_DISTRIBUTED_BACKENDS ")",
             SKEIN_OPTION_SPECS(DDP_OPTIONS))
