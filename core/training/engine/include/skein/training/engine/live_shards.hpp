#pragma once
// Live recovery under a sharded optimizer (zero; optimizer_mirror.hpp): no
// member holds the whole optimizer, so a hand-over first brings every shard
// to the leader, each from a member that holds it (its owner, or the rank
// before it, which mirrors it), together with its parameters as stepped
// there. A shard whose owner and mirror are both gone cannot be had: the
// run then fails as without live recovery (a restart from its newest
// checkpoint).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>

#include "skein/detail/export.hpp"
#include "skein/parallel.hpp"
#include "skein/training/engine/run_parts.hpp"

namespace skein::core {

// What a member brings to a hand-over.
struct ShardOffer {
  int id = -1;
  // Ids of the membership its shards are of (a rank is its index there);
  // empty for a replacement, which has none yet.
  std::vector<int> shards_of;
  long epoch = 0, batches = 0;  // where they are: the epoch and its train batches up to the last step
  bool kept = false;            // it kept the last hand-over's checkpoint (no step committed since)
};

// Who sends what, decided alike on every member from all the offers.
struct ShardPlan {
  int kept_from = -1;             // a member's (new) rank that sends its kept checkpoint; -1: gather shards
  std::vector<int> shards_of;     // the membership the shards are of
  std::vector<int> holder;        // per rank of it: the new rank that sends its shard
};

// Every member's offer, through `group` (one small broadcast each), then
// the plan. Throws NotRecoverable (live_recovery.hpp) when a shard is lost
// or the holders' shards are of different steps.
SKEIN_EXPORT ShardPlan plan_shard_hand_over(RegroupingParallel& group, int rank, int world_size,
                                            const ShardOffer& mine);

// The plan from every member's offer (offers[r]: the member of rank r).
SKEIN_EXPORT ShardPlan plan_from_offers(const std::vector<ShardOffer>& offers);

// One shard as bytes: its spans' parameters and its optimizer's state.
struct ShardBytes {
  std::string params, optimizer;
};

// Every shard of plan.shards_of from its holder (`serialize(r)` for the
// shards this member holds) to the leader (rank 0): indexed by the rank it
// is of; empty elsewhere.
SKEIN_EXPORT std::vector<ShardBytes> gather_shards(RegroupingParallel& group, int rank, const ShardPlan& plan,
                                                   const std::function<ShardBytes(int shard)>& serialize);

// The shard of rank `owner` of parts.shard_spans as bytes: this rank's own
// (`own`) or the one it mirrors.
SKEIN_EXPORT ShardBytes shard_bytes(RunParts& parts, int owner, bool own);

// Every shard's parameters into the model, and the whole optimizer they make
// (for the leader's checkpoint); `shards` indexed by the rank they are of.
SKEIN_EXPORT std::unique_ptr<torch::optim::Optimizer> place_shards(RunParts& parts,
                                                                   const std::vector<ShardBytes>& shards);

}  // namespace skein::core
