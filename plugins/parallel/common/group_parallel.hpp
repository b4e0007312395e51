#pragma once
// What ddp and zero share around the gradient reducer: the options of the
// process group they run over, making that group, and a base class with
// skein::Parallel's collectives on it, gradients through a GradientReducer.
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/nn/module.h>

#include "gradient_reducer.hpp"
#include "skein/parallel.hpp"
#include "skein/plugin.hpp"

// The process group's options, as X-macro entries of a plugin's option list
// (X(name, type, default_json, doc, limits)).
#define SKEIN_PROCESS_GROUP_OPTIONS(X)                                                                 \
  X(backend, choice, "\"auto\"",                                                                      \
    "auto: nccl for a run on CUDA, gloo on the CPU; gloo on CUDA moves the device's tensors "           \
    "through Gloo; nccl needs a CUDA run and a libtorch with NCCL (the description says which)",       \
    SKEIN_CHOICES("auto|gloo|nccl"))                                                                  \
  X(gloo_host, string, "\"\"",                                                                        \
    "Address Gloo binds to (default: 127.0.0.1 on one machine, the host's "                           \
    "address across machines)")                                                                        \
  X(broadcast_buffers, boolean, "true",                                                               \
    "rank 0's buffers (BatchNorm's running statistics) broadcast to every rank before each optimizer " \
    "step's first forward and before each evaluation, as PyTorch DDP's broadcast_buffers: the "       \
    "metrics are then those of the model rank 0 saves; false: each rank keeps its own (the reported " \
    "metrics mix the ranks' models)")

namespace skein_parallel {

// Those options' values, and the name of the backend option for messages.
struct GroupOptions {
  std::string backend;
  std::string gloo_host;
  const char* backend_key = "backend";
  bool broadcast_buffers = true;
};

// Whether CUDA tensors' collectives go to NCCL: "auto" on a CUDA run where
// NCCL is compiled in, or "nccl" asked for (refused, through
// args.options.fail, where it cannot work).
bool uses_nccl(const skein::PluginArgs& args, const GroupOptions& o);

// How plugin `who` makes its process groups, kept from its arguments so that
// groups can be made after construction (live recovery makes one per membership).
struct GroupMaker {
  c10::intrusive_ptr<c10d::Store> store;  // the run's; null without one
  std::string host;                       // Gloo's device ("": the host's address)
  bool nccl = false;
  // A group of `world` processes with its keys under `prefix` of the store.
  c10::intrusive_ptr<c10d::ProcessGroup> make(const std::string& prefix, int rank, int world, double timeout_s) const;
};
GroupMaker group_maker(const skein::PluginArgs& args, const GroupOptions& o);

// The run's process group for plugin `who` (its keys under one prefix per
// plugin and run in the run's store); null for a run of one process. A run
// of several without a store is a ConfigError.
c10::intrusive_ptr<c10d::ProcessGroup> make_group(const skein::PluginArgs& args, const std::string& who,
                                                  const GroupOptions& o);

// Broadcasts `tensors` from rank `root` into every rank's: those below
// kCoalesceBytes together, through buffers of that size (copies), larger
// ones each on its own, without a copy. One buffer for all (c10d's
// broadcast_coalesced with a large cap) would be a transient copy of as
// much as the buffer holds: 201 MB of bench/zero_memory.py's deep MLP, at
// the top of zero's peak.
constexpr std::size_t kCoalesceBytes = 4u << 20;
void broadcast_in_place(const c10::intrusive_ptr<c10d::ProcessGroup>& group, const std::vector<torch::Tensor>& tensors,
                        int root);
// Every rank's parameters and buffers become rank 0's (before training).
void broadcast_from_rank0(const c10::intrusive_ptr<c10d::ProcessGroup>& group, torch::nn::Module& model);

// skein::Parallel's collectives over group_, gradients through reducer_
// (nothing to do without them: one process), buffers kept in step with
// rank 0's (skein::BufferSync) unless the options say not to.
class GroupParallel : public skein::Parallel, public skein::BufferSync {
 public:
  void sync_buffers() override;
  void set_gradient_sync(bool enabled) override;
  void finish_gradients() override;
  void all_reduce_sum(std::vector<double>& values) override;
  void all_reduce_max(std::vector<double>& values) override;
  void barrier() override;

 protected:
  explicit GroupParallel(std::string who) : who_(std::move(who)) {}
  // prepare()'s start: every rank's parameters and buffers become rank 0's,
  // and the buffers are those sync_buffers() keeps in step.
  void attach(torch::nn::Module& model);
  std::string who_;  // the plugin's name, for messages
  bool broadcast_buffers_ = true;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  std::unique_ptr<GradientReducer> reducer_;  // made by prepare()

 private:
  void reduce(std::vector<double>& values, c10d::ReduceOp op);
  std::vector<torch::Tensor> buffers_;  // the model's, as attach() found them
};

}  // namespace skein_parallel
