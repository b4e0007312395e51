#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "skein/detail/export.hpp"

namespace skein {

// Base of every parallel wrapper. A wrapper never replaces the model: it
// attaches to the user's module (broadcast, gradient hooks) and offers the
// collectives the trainer and callbacks need to agree across ranks.
class SKEIN_EXPORT Parallel {
 public:
  virtual ~Parallel();
  // Called once before training, with the user's module.
  virtual void prepare(torch::nn::Module& model) = 0;
  // Whether the coming backward pass must reduce gradients (false on
  // non-final micro-batches of gradient accumulation).
  virtual void set_gradient_sync(bool enabled) { (void)enabled; }
  // After backward: gradients are the average over ranks when this returns.
  virtual void finish_gradients() = 0;
  // Element-wise sum / maximum over ranks, in place. Every rank must call
  // these in the same order (they are collectives).
  virtual void all_reduce_sum(std::vector<double>& values) = 0;
  virtual void all_reduce_max(std::vector<double>& values) = 0;
  virtual void barrier() = 0;
};

// Optional second base of a parallel wrapper that keeps state across steps
// which a checkpoint must carry for an exact resume (a gradient compression's
// error feedback, say). The host finds it with dynamic_cast, so wrappers
// without state, and plugins built before API 2.1, need nothing.
// Each rank's state is its own: state() is called on every rank when a
// checkpoint is written (rank 0 stores them all, by rank), and on resume rank
// r's bytes come back to rank r through load_state(), after prepare().
class SKEIN_EXPORT ParallelState {
 public:
  virtual ~ParallelState();
  // This rank's state as bytes (empty: nothing to keep).
  virtual std::string state() const = 0;
  // Throws (one line) when `bytes` do not fit this model and configuration.
  virtual void load_state(const std::string& bytes) = 0;
};

// API 3.3: optional second base of a parallel wrapper that shards the
// optimizer's state across ranks (ZeRO: each rank's optimizer holds the state
// of the parameters it owns only). The host finds it with dynamic_cast and
// then, on every rank:
// - after prepare(), asks parameter_owners() once and makes this rank's
//   optimizer over the parameters it owns (in their order in the list; an
//   elementwise optimizer's over pieces of the large ones, API 3.5:
//   skein::ElementwiseOptimizer);
// - calls after_step() after every optimizer step of an accumulation group,
//   whether the step was taken or skipped (a collective: every rank calls it);
// - writes checkpoints with the whole optimizer, consolidated on rank 0 from
//   every rank's (optimizer.pt as an unsharded run writes it), and on resume
//   gives each rank the state of its own parameters.
class SKEIN_EXPORT ShardedOptimizer {
 public:
  virtual ~ShardedOptimizer();
  // The rank that owns (steps) each of `params`, the model's parameters in
  // parameters() order: element i for params[i], each in [0, world size).
  // Deterministic: the same answer on every rank.
  virtual std::vector<int> parameter_owners(const std::vector<torch::Tensor>& params) = 0;
  // After the optimizer step: every rank's parameters equal their owner's
  // when it returns, and the gradients of parameters this rank does not own
  // are dropped (its optimizer's zero_grad reaches its own only).
  virtual void after_step() = 0;
};

// API 3.6: elements [offset, offset + length) of params[param] (in its
// flattened order) and the rank that owns (steps) them.
struct ParameterSpan {
  std::size_t param = 0;
  std::int64_t offset = 0, length = 0;
  int owner = 0;
};

// API 3.6: optional second base of a ShardedOptimizer that may own a
// parameter in parts (a flat partition, as DeepSpeed's ZeRO: a rank's share
// of the optimizer's state is then about 1/W even where one parameter is a
// large part of the model). The host finds it with dynamic_cast and asks
// parameter_spans() instead of parameter_owners(), once, after prepare().
// `cut`: whether the optimizer updates each element from that element's
// state alone (skein::ElementwiseOptimizer), so that a parameter may be
// stepped in parts; when false, every parameter must be one span. The
// answer: each parameter's spans, parameters in order and each one's spans
// in order, covering its elements once; a parameter in several spans must be
// contiguous. after_step() then makes every rank's parameters equal to
// their spans' owners', and each owner of a span of a parameter must hold
// that parameter's averaged gradient when the optimizer steps.
class SKEIN_EXPORT ShardedInSpans {
 public:
  virtual ~ShardedInSpans();
  virtual std::vector<ParameterSpan> parameter_spans(const std::vector<torch::Tensor>& params, bool cut) = 0;
};

// API 3.9: optional second base of a parallel wrapper that keeps the
// model's buffers (BatchNorm's running statistics and counter) in step across
// ranks, as PyTorch's DDP does with broadcast_buffers=True. The host finds it
// with dynamic_cast and calls sync_buffers() on every rank (a collective)
// before the forward of the first micro-batch of each optimizer step and
// before each evaluation pass: every rank's buffers become rank 0's, so that
// what is evaluated on any rank, reported and saved is one model (rank 0's).
class SKEIN_EXPORT BufferSync {
 public:
  virtual ~BufferSync();
  virtual void sync_buffers() = 0;
};

// API 3.8: live recovery (docs/distributed.md, "Live recovery"). A parallel
// wrapper that can go on after one of its processes is lost implements
// RegroupingParallel, an optional base found with dynamic_cast (no vtable of
// 3.7 changed); the engine then owns its process group's life: after a failed
// step the survivors agree on who goes on (through the store the launcher
// serves), and the wrapper builds a new group of them under a new store
// prefix. (Plugins that keep a rank or world size of their own:
// skein::WorldChangeListener, skein/run.hpp.)
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

}  // namespace skein
