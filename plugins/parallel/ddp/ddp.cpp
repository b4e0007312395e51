// Parallel wrapper "ddp": data parallel over a c10d process group (Gloo on
// the CPU, NCCL for CUDA tensors where libtorch has it). Parameters and buffers start equal (broadcast from rank 0),
// buffers stay rank 0's (broadcast before each step and evaluation, as PyTorch DDP's); gradients
// are averaged by GradientReducer during backward. The user's module is never
// wrapped: ctx.model<T>() is the same object as in a single-process run.
#include <torch/types.h>

#include "../common/live_group.hpp"
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
  SKEIN_LIVE_RECOVERY_OPTIONS(X)                                                                      \
  SKEIN_PROCESS_GROUP_OPTIONS(X)

namespace {

SKEIN_OPTIONS_STRUCT(DdpOptions, DDP_OPTIONS)

class Ddp final : public skein_parallel::LiveGroupParallel, public skein::ParallelState {
 public:
  explicit Ddp(const skein::PluginArgs& args) : LiveGroupParallel("ddp") {
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
    make_groups(args, {o.backend, o.gloo_host, DdpOptions::names::backend, o.broadcast_buffers},
                skein_parallel::live_recovery_of(o));
  }

  void prepare(torch::nn::Module& model) override {
    attach(model);
    if (!group_) return;
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

 private:
  skein_parallel::ReducerOptions reducer_options_;
};

}  // namespace

SKEIN_PLUGIN(Ddp, parallel, "ddp", "1.4.0",
             "Data parallel: bucketed all-reduce of gradients overlapped with backward (Gloo on the CPU, NCCL on CUDA; "
             "compiled in: " SKEIN_DISTRIBUTED_BACKENDS ")",
             SKEIN_OPTION_SPECS(DDP_OPTIONS))
