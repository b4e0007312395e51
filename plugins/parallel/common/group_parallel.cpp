#include "group_parallel.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <cstring>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/types.h>
#include <torch/utils.h>

#include "skein/errors.hpp"
#include "skein/io/store.hpp"
#include "skein/run_store.hpp"
#include "skein/torch_compat/process_group.hpp"

namespace skein_parallel {

bool uses_nccl(const skein::PluginArgs& args, const GroupOptions& o) {
  const bool cuda = torch::Device(args.run.device).is_cuda();
  if (o.backend == "auto") return cuda && SKEIN_TORCH_NCCL;
  if (o.backend != "nccl") return false;
  if (!SKEIN_TORCH_NCCL)
    args.options.fail(o.backend_key,
                      "'nccl' is not compiled into this build (its libtorch has " SKEIN_DISTRIBUTED_BACKENDS ")");
  if (!cuda)
    args.options.fail(o.backend_key, "'nccl' needs the run on a CUDA device; this one is on " + args.run.device +
                                         " (the config's \"device\")");
  return true;
}

GroupMaker group_maker(const skein::PluginArgs& args, const GroupOptions& o) {
  GroupMaker maker;
  maker.nccl = uses_nccl(args, o);
  if (args.store && *args.store) maker.store = args.store->store;
  maker.host = o.gloo_host;
  // Gloo would fail on it later with an "enforce fail" and a stack of its own.
  if (!maker.host.empty() && args.run.world_size > 1) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(maker.host.c_str(), nullptr, &hints, &found);
    if (found) ::freeaddrinfo(found);
    if (rc != 0)
      args.options.fail("gloo_host", "names '" + maker.host + "', which does not resolve to an address (" +
                                         ::gai_strerror(rc) + ")");
  }
  if (maker.host.empty() && !args.run.multi_node) maker.host = "127.0.0.1";  // one machine: loopback only
  return maker;
}

c10::intrusive_ptr<c10d::ProcessGroup> GroupMaker::make(const std::string& prefix, int rank, int world,
                                                        double timeout_s) const {
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
  auto pg_opts = c10d::ProcessGroupGloo::Options::create(skein::to_millis(timeout_s));
  pg_opts->devices.push_back(host.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                                          : c10d::ProcessGroupGloo::createDeviceForHostname(host));
  return skein::torch_compat::make_process_group(prefixed, rank, world, pg_opts, nccl);
}

c10::intrusive_ptr<c10d::ProcessGroup> make_group(const skein::PluginArgs& args, const std::string& who,
                                                  const GroupOptions& o) {
  const GroupMaker maker = group_maker(args, o);
  const skein::RunInfo& run = args.run;
  if (run.world_size == 1) return {};  // nothing to synchronise
  if (!maker.store)
    throw skein::ConfigError("parallel '" + who + "': WORLD_SIZE is " + std::to_string(run.world_size) +
                             " but the run has no store (start it with skein train --nproc-per-node)");
  return maker.make("skein/" + who + "/" + run.run_id + "/", run.rank, run.world_size, run.timeout_s);
}

void broadcast_in_place(const c10::intrusive_ptr<c10d::ProcessGroup>& group, const std::vector<torch::Tensor>& tensors,
                        int root) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> small, large;
  for (const auto& t : tensors)
    (static_cast<std::size_t>(t.numel()) * t.element_size() < kCoalesceBytes ? small : large).push_back(t);
  // Buckets of 1 byte hold one tensor each: sent from where it is (c10d
  // keeps 2 in flight).
  if (!large.empty()) c10d::broadcast_coalesced(group, large, 1, root);
  if (!small.empty()) c10d::broadcast_coalesced(group, small, kCoalesceBytes, root);
}

void broadcast_from_rank0(const c10::intrusive_ptr<c10d::ProcessGroup>& group, torch::nn::Module& model) {
  std::vector<torch::Tensor> state = model.parameters();
  for (const auto& b : model.buffers()) state.push_back(b);
  broadcast_in_place(group, state, 0);
}

void GroupParallel::attach(torch::nn::Module& model) {
  buffers_ = model.buffers();
  if (group_) broadcast_from_rank0(group_, model);
}

void GroupParallel::sync_buffers() {
  if (group_ && broadcast_buffers_ && !buffers_.empty()) broadcast_in_place(group_, buffers_, 0);
}

void GroupParallel::set_gradient_sync(bool enabled) {
  if (reducer_) reducer_->set_enabled(enabled);
}
void GroupParallel::finish_gradients() {
  if (reducer_) reducer_->finish();
}

void GroupParallel::all_reduce_sum(std::vector<double>& values) { reduce(values, c10d::ReduceOp::SUM); }
void GroupParallel::all_reduce_max(std::vector<double>& values) { reduce(values, c10d::ReduceOp::MAX); }

void GroupParallel::barrier() {
  if (group_) wait_for(*group_->barrier(), who_, "barrier");
}

void GroupParallel::reduce(std::vector<double>& values, c10d::ReduceOp op) {
  if (!group_ || values.empty()) return;
  auto t = torch::tensor(values, torch::kFloat64);
  std::vector<torch::Tensor> tensors{t};
  c10d::AllreduceOptions opts;
  opts.reduceOp = op;
  wait_for(*group_->allreduce(tensors, opts), who_, "all-reduce");
  std::memcpy(values.data(), t.data_ptr<double>(), values.size() * sizeof(double));
}

}  // namespace skein_parallel
