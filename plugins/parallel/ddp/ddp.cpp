// Parallel wrapper "ddp": data parallel over a c10d process group (Gloo on
// the CPU, NCCL for CUDA tensors where libtorch has it). Parameters and buffers start equal (broadcast from rank 0); gradients
// are averaged by GradientReducer during backward. The user's module is never
// wrapped: ctx.model<T>() is the same object as in a single-process run.
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/types.h>
#include <torch/utils.h>

#include "gradient_reducer.hpp"
#include "skein/errors.hpp"
#include "skein/io/store.hpp"
#include "skein/parallel.hpp"
#include "skein/plugin.hpp"
#include "skein/run_store.hpp"
#include "skein/torch_compat/process_group.hpp"

// Declared once: the schema and DdpOptions.
#define DDP_OPTIONS(X)                                                                                 \
  X(bucket_cap_mb, number, "25", "Largest gradient bucket, in MiB", SKEIN_RANGE("(0, )"))             \
  X(first_bucket_mb, number, "1", "Cap of the first bucket (small, so communication starts early)",  \
    SKEIN_RANGE("(0, )"))                                                                             \
  X(overlap, boolean, "true", "Launch each bucket's all-reduce during backward (false: after it)")   \
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
  X(backend, choice, "\"auto\"",                                                                    \
    "auto: nccl for a run on CUDA, gloo on the CPU; gloo on CUDA moves the device's tensors "           \
    "through Gloo; nccl needs a CUDA run and a libtorch with NCCL (the description says which)",       \
    SKEIN_CHOICES("auto|gloo|nccl"))                                                                  \
  X(gloo_host, string, "\"\"",                                                                        \
    "Address Gloo binds to (default: 127.0.0.1 on one machine, the host's "                           \
    "address across machines)")

namespace {

SKEIN_OPTIONS_STRUCT(DdpOptions, DDP_OPTIONS)

// ddp's keys in the run's store: its process group's, under one prefix per run.
std::string ddp_store_prefix(const std::string& run) { return "skein/ddp/" + run + "/"; }

class Ddp final : public skein::Parallel, public skein::ParallelState {
 public:
  explicit Ddp(const skein::PluginArgs& args) : run_(args.run) {
    const auto& opt = args.options;
    const DdpOptions o(opt);
    reducer_options_.cap_bytes = static_cast<std::size_t>(o.bucket_cap_mb * (1 << 20));
    reducer_options_.first_cap_bytes = static_cast<std::size_t>(o.first_bucket_mb * (1 << 20));
    reducer_options_.overlap = o.overlap;
    const std::string& compression = o.compression;
    reducer_options_.fp16 = compression == "fp16";
    if (compression == "powersgd") {
      skein_ddp::PowerSgdOptions powersgd;
      powersgd.rank = static_cast<int>(o.powersgd_rank);
      powersgd.warmup_steps = o.powersgd_warmup_steps;
      reducer_options_.powersgd = powersgd;
    }
    const bool nccl = uses_nccl(o.backend, opt);
    if (run_.world_size == 1) return;  // nothing to synchronise
    if (!args.store || !*args.store)
      throw skein::ConfigError("parallel 'ddp': WORLD_SIZE is " + std::to_string(run_.world_size) +
                               " but the run has no store (start it with skein train --nproc-per-node)");
    const auto timeout = skein::to_millis(run_.timeout_s);
    auto store = c10::make_intrusive<c10d::PrefixStore>(ddp_store_prefix(run_.run_id),
                                                        args.store->store);
    auto pg_opts = c10d::ProcessGroupGloo::Options::create(timeout);
    std::string host = o.gloo_host;
    if (host.empty() && !run_.multi_node) host = "127.0.0.1";  // one machine: loopback only
    pg_opts->devices.push_back(host.empty()
                                   ? c10d::ProcessGroupGloo::createDefaultDevice()
                                   : c10d::ProcessGroupGloo::createDeviceForHostname(host));
    group_ = skein::torch_compat::make_process_group(store, run_.rank, run_.world_size, pg_opts, nccl);
  }

  // Whether CUDA tensors' collectives go to NCCL: "auto" on a CUDA run where
  // NCCL is compiled in, or "nccl" asked for (refused where it cannot work).
  bool uses_nccl(const std::string& backend, const skein::Options& opt) const {
    const bool cuda = torch::Device(run_.device).is_cuda();
    if (backend == "auto") return cuda && SKEIN_TORCH_NCCL;
    if (backend != "nccl") return false;
    if (!SKEIN_TORCH_NCCL)
      opt.fail(DdpOptions::names::backend,
               "'nccl' is not compiled into this build (its libtorch has " SKEIN_DISTRIBUTED_BACKENDS ")");
    if (!cuda)
      opt.fail(DdpOptions::names::backend, "'nccl' needs the run on a CUDA device; this one is on " + run_.device +
                                               " (the config's \"device\")");
    return true;
  }

  void prepare(torch::nn::Module& model) override {
    if (!group_) return;
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> state = model.parameters();
    for (const auto& b : model.buffers()) state.push_back(b);
    c10d::broadcast_coalesced(group_, state, 256u << 20, 0);
    std::vector<torch::Tensor> trainable;
    for (const auto& p : model.parameters())
      if (p.requires_grad()) trainable.push_back(p);
    reducer_ = std::make_unique<skein_ddp::GradientReducer>(group_, trainable, reducer_options_);
  }

  void set_gradient_sync(bool enabled) override {
    if (reducer_) reducer_->set_enabled(enabled);
  }
  void finish_gradients() override {
    if (reducer_) reducer_->finish();
  }
  void all_reduce_sum(std::vector<double>& values) override { reduce(values, c10d::ReduceOp::SUM); }
  void all_reduce_max(std::vector<double>& values) override { reduce(values, c10d::ReduceOp::MAX); }
  void barrier() override {
    if (group_) skein_ddp::wait_for(*group_->barrier(), "barrier");
  }
  // PowerSGD's step count, Q and this rank's error feedback (else nothing).
  std::string state() const override { return reducer_ ? reducer_->compression_state() : std::string(); }
  void load_state(const std::string& bytes) override {
    if (reducer_) reducer_->load_compression_state(bytes);
  }

 private:
  void reduce(std::vector<double>& values, c10d::ReduceOp op) {
    if (!group_ || values.empty()) return;
    auto t = torch::tensor(values, torch::kFloat64);
    std::vector<torch::Tensor> tensors{t};
    c10d::AllreduceOptions opts;
    opts.reduceOp = op;
    skein_ddp::wait_for(*group_->allreduce(tensors, opts), "all-reduce");
    std::memcpy(values.data(), t.data_ptr<double>(), values.size() * sizeof(double));
  }

  skein::RunInfo run_;
  skein_ddp::ReducerOptions reducer_options_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  std::unique_ptr<skein_ddp::GradientReducer> reducer_;
};

}  // namespace

SKEIN_PLUGIN(Ddp, parallel, "ddp", "1.2.0",
             "Data parallel: bucketed all-reduce of gradients overlapped with backward (Gloo on the CPU, NCCL on CUDA; "
             "compiled in: " SKEIN_DISTRIBUTED_BACKENDS ")",
             SKEIN_OPTION_SPECS(DDP_OPTIONS))
