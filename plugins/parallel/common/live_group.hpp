#pragma once
// What ddp and zero share for live recovery (docs/distributed.md, "Live
// recovery"; SDK: skein::RegroupingParallel): its options, and a base class
// that makes one process group per membership when it is on (the run's one
// group otherwise).
#include <string>

#include "group_parallel.hpp"
#include "skein/parallel.hpp"
#include "skein/plugin.hpp"

// Live recovery's options, as X-macro entries of a plugin's option list.
#define SKEIN_LIVE_RECOVERY_OPTIONS(X)                                                                 \
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
    "checkpoint and the launcher's --max-restarts)", SKEIN_RANGE("[1, )"))

namespace skein_parallel {

// The options' values (a plugin's options struct with those entries).
template <class PluginOptions>
skein::LiveRecoveryOptions live_recovery_of(const PluginOptions& o) {
  skein::LiveRecoveryOptions live;
  live.enabled = o.live_recovery;
  live.collective_timeout_s = o.collective_timeout_s;
  live.window_s = o.recovery_window_s;
  live.min_ranks = static_cast<int>(o.min_ranks);
  return live;
}

// A GroupParallel whose group the engine remakes for each membership when
// live recovery is on.
class LiveGroupParallel : public GroupParallel, public skein::RegroupingParallel {
 public:
  skein::LiveRecoveryOptions live_recovery() const override { return live_; }
  void drop_group() override;
  // The new group, then prepare(model) over it.
  void regroup(const skein::WorldChange& change, torch::nn::Module& model) override;
  void broadcast_bytes(std::string& bytes, int root) override;

 protected:
  explicit LiveGroupParallel(std::string who) : GroupParallel(std::move(who)) {}
  // The run's group, or with live recovery on (checked: Gloo, a window
  // longer than the collective timeout) what makes one per membership.
  void make_groups(const skein::PluginArgs& args, const GroupOptions& group, const skein::LiveRecoveryOptions& live);
  // Told of a new membership before its group is made.
  virtual void world_changed(const skein::WorldChange&) {}

  skein::LiveRecoveryOptions live_;
  GroupMaker maker_;
};

}  // namespace skein_parallel
