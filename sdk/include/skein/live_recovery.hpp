#pragma once
// API 3.8: live recovery (docs/distributed.md, "Live recovery"). A parallel
// wrapper that can go on after one of its processes is lost implements
// RegroupingParallel; the engine then owns its process group's life: after
// a failed step the survivors agree on who goes on (through the store the
// launcher serves), and the wrapper builds a new group of them under a new
// store prefix. A history backend or callback that keeps a rank or a world
// size of its own implements WorldChangeListener. Both are optional bases
// found with dynamic_cast: no vtable of 3.7 changed.
#include <cstdint>
#include <string>

#include <torch/nn/module.h>

#include "skein/detail/export.hpp"
#include "skein/run.hpp"

namespace skein {

// What the wrapper's options ask of live recovery.
struct LiveRecoveryOptions {
  bool enabled = false;
  // Bound of one collective (and of building a group): a lost peer is found
  // within it. Separate from RunInfo::timeout_s, the bound of store waits.
  double collective_timeout_s = 1;
  // How long survivors wait for each other after a failure before those
  // there go on without the rest (longer than the collective timeout).
  double window_s = 3;
  // Fewer ranks than this after a failure: the run stops as without live
  // recovery (its launcher restarts it from the newest checkpoint).
  int min_ranks = 1;
};

// One membership of the run: this process's rank in it, its size, and the
// store prefix its group keeps its keys under (a new one each time).
struct WorldChange {
  std::int64_t generation = 0;
  std::string store_prefix;
  int rank = 0;
  int world_size = 1;
};

class SKEIN_EXPORT RegroupingParallel {
 public:
  virtual ~RegroupingParallel();
  virtual LiveRecoveryOptions live_recovery() const = 0;
  // Drops the process group and what runs over it (a peer of it is gone:
  // nothing is sent). Not a collective.
  virtual void drop_group() = 0;
  // Builds the group of `change` (a collective of its members; a group of
  // one needs no other) and the gradient sync over it for `model`; every
  // member's parameters and buffers become rank 0's.
  virtual void regroup(const WorldChange& change, torch::nn::Module& model) = 0;
  // Every member's `bytes` become rank `root`'s (a collective).
  virtual void broadcast_bytes(std::string& bytes, int root) = 0;
};

class SKEIN_EXPORT WorldChangeListener {
 public:
  virtual ~WorldChangeListener();
  // The run goes on as `run` (its rank and world size changed) in
  // membership `generation`; called on every member, before anything of the
  // new membership is synchronised.
  virtual void on_world_change(const RunInfo& run, std::int64_t generation) = 0;
};

}  // namespace skein
