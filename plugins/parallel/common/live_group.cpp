#include "live_group.hpp"

#include <cstring>

#include <torch/types.h>

namespace skein_parallel {

void LiveGroupParallel::make_groups(const skein::PluginArgs& args, const GroupOptions& group,
                                    const skein::LiveRecoveryOptions& live) {
  live_ = live;
  broadcast_buffers_ = group.broadcast_buffers;
  if (live_.enabled && live_.min_ranks > args.run.world_size)
    args.options.fail("min_ranks", "is " + std::to_string(live_.min_ranks) + ", more than the run's " +
                                       std::to_string(args.run.world_size) +
                                       " processes: live recovery could never go on after a loss");
  if (!live_.enabled) {
    group_ = make_group(args, who_, group);
    return;
  }
  // Live recovery: the engine makes each membership's group (regroup).
  if (live_.window_s <= live_.collective_timeout_s)
    args.options.fail("recovery_window_s",
                      "must be more than collective_timeout_s, or a survivor still inside a collective is left out");
  maker_ = group_maker(args, group);
  if (maker_.nccl) args.options.fail("live_recovery", "is for Gloo groups; this run's backend is nccl");
  // Without the run's store: the engine's live recovery refuses the run (live_recovery.cpp).
}

void LiveGroupParallel::drop_group() {
  reducer_.reset();  // its hooks first, then the works over the group
  group_.reset();
}

void LiveGroupParallel::regroup(const skein::WorldChange& change, torch::nn::Module& model) {
  drop_group();
  world_changed(change);
  if (change.world_size > 1)  // alone: nothing to synchronise
    group_ = maker_.make(change.store_prefix + who_ + "/", change.rank, change.world_size, live_.collective_timeout_s);
  prepare(model);
}

void LiveGroupParallel::broadcast_bytes(std::string& bytes, int root) {
  if (!group_) return;
  torch::Tensor size = torch::tensor({static_cast<std::int64_t>(bytes.size())}, torch::kInt64);
  broadcast_in_place(group_, {size}, root);
  torch::Tensor data = torch::empty({size.item<std::int64_t>()}, torch::kUInt8);
  if (group_->getRank() == root) std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
  broadcast_in_place(group_, {data}, root);
  bytes.assign(static_cast<const char*>(data.data_ptr()), static_cast<std::size_t>(data.numel()));
}

}  // namespace skein_parallel
