#pragma once
// Averages gradients across ranks in buckets, overlapping communication with
// backward (the scheme of PyTorch's DDP, VLDB 2020): parameters are grouped
// in reverse registration order (roughly the order backward produces their
// gradients) into buckets of at most `cap_bytes` (the first one smaller, so
// communication starts early). A full bucket's all-reduce is launched at
// once, asynchronously, always in bucket order so every rank issues the same
// sequence of collectives. finish() launches what unused parameters held
// back and waits.
//
// Gradients live in the buckets (PyTorch's gradient_as_bucket_view): each
// parameter's .grad is its slot of its bucket's flat buffer, so autograd
// accumulates straight into the bucket and a rank holds one copy of the
// gradients, not two. A hook after each parameter's accumulation
// (torch_compat/grad_accumulator.hpp) counts it towards its bucket's launch.
// A .grad that is not its slot (the first backward; an optimizer's
// zero_grad that sets gradients to none, libtorch 2.x's default; a callback
// that replaced it) is copied into the slot at that point and replaced by
// it, so the result never depends on what happened to .grad in between.
// Slots are plain tensors on the bucket's storage, not autograd views, so
// an optimizer's zero_grad (detach_ then zero_ or reset) works on them.
// Between a bucket's launch and finish() its gradients are in flux (divided,
// being reduced): nothing reads them then.
//
// Compression fp16 (the idea of PyTorch's fp16_compress_hook): a float32 or
// float64 bucket travels as half precision, half the bytes on the wire, and
// is cast back to the parameter dtype once reduced. Buckets are formed as
// without compression (caps count the parameters' own bytes).
//
// Owners (ZeRO stage 2): a bucket's parameters share their owner, and its
// collective is a reduce to that rank instead of an all-reduce. Only the
// owner keeps the bucket. Another rank's bucket is a transit buffer, made
// when its first gradient arrives and released once reduced: the gradient
// autograd made, when it is the bucket's only one (no copy), else a buffer
// the gradients are copied into. The .grad of another rank's parameter is
// dropped as soon as it is in transit. At most kForeignInFlight such
// buffers are held at once: launching one more first waits for the oldest's
// reduce, so this rank's memory for others' gradients is bounded whatever
// the link's speed (backward may then wait for the network, the trade of
// stage 2); a large one (kLargeTransitBytes) is waited for at once. This rank's own parameter alone in its bucket (a large one) has
// no slot either: its bucket is the gradient autograd made, reduced where it
// is and left as .grad (borrowed), and drop_borrowed_gradients() lets it go
// once the optimizer has stepped, so between steps it takes no memory and in
// backward it is made once, not made and then added into a slot.
//
// Compression PowerSGD (powersgd.hpp): the float32 matrices worth compressing
// form one last bucket of their own, never launched from a hook; finish()
// reduces it after the other buckets are launched: uncompressed during the
// warm-up, then as low-rank factors. The other parameters travel as without
// compression, overlapped with backward.
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/types.h>

#include "powersgd.hpp"
#include "skein/torch_compat/grad_accumulator.hpp"

// The bucket options of a plugin that reduces gradients with GradientReducer,
// as X-macro entries of its option list.
#define SKEIN_BUCKET_OPTIONS(X)                                                                        \
  X(bucket_cap_mb, number, "25", "Largest gradient bucket, in MiB", SKEIN_RANGE("(0, )"))             \
  X(first_bucket_mb, number, "1", "Cap of the first bucket (small, so communication starts early)",  \
    SKEIN_RANGE("(0, )"))                                                                             \
  X(overlap, boolean, "true", "Launch each bucket's reduction during backward (false: after it)")

namespace skein_parallel {

// Waits for a collective; a failure (a peer that died, or stopped answering
// for longer than the run's timeout) becomes one line that says so, starting
// with `who` (the plugin's name).
void wait_for(c10d::Work& work, const std::string& who, const char* what);
// Runs a blocking collective `run`, its failure made one such line.
void collective(const std::string& who, const char* what, const std::function<void()>& run);

// An owner (ReducerOptions::owners) that is every rank.
constexpr int kEveryRank = -1;

struct ReducerOptions {
  std::size_t cap_bytes = 25u << 20;
  std::size_t first_cap_bytes = 1u << 20;
  // false: launch every bucket only after backward (for measuring the overlap).
  bool overlap = true;
  // true: all-reduce float32/float64 buckets as float16 (see above).
  bool fp16 = false;
  // Set: compress float32 matrices with PowerSGD (see above).
  std::optional<PowerSgdOptions> powersgd;
  // Set (one rank per parameter, in the constructor's order): each gradient
  // goes to its owner alone (ZeRO stage 2). Buckets then hold one owner's
  // parameters and are reduced to that rank; finish() leaves the averages on
  // this rank's parameters and drops the others' gradients. kEveryRank: a
  // parameter owned in parts, all-reduced (its buckets hold such ones only).
  // Not with fp16 or powersgd.
  std::vector<int> owners;
  // The plugin's name, first word of a failed collective's message.
  std::string who = "ddp";

  // The bucket options' values (SKEIN_BUCKET_OPTIONS, read into an options struct).
  template <class PluginOptions>
  static ReducerOptions buckets_of(const PluginOptions& o) {
    ReducerOptions r;
    r.cap_bytes = static_cast<std::size_t>(o.bucket_cap_mb * (1 << 20));
    r.first_cap_bytes = static_cast<std::size_t>(o.first_bucket_mb * (1 << 20));
    r.overlap = o.overlap;
    return r;
  }
};

class GradientReducer {
 public:
  GradientReducer(c10::intrusive_ptr<c10d::ProcessGroup> group, std::vector<torch::Tensor> params,
                  const ReducerOptions& options);
  // When false (non-final micro-batches of accumulation), nothing is
  // launched: gradients just accumulate locally (in their slots).
  void set_enabled(bool enabled) { enabled_ = enabled; }
  // Every gradient is the average over ranks when this returns (with owners:
  // this rank's own; the others' are dropped).
  void finish();
  // With owners, after the optimizer step: the .grad of each of this rank's
  // parameters alone in its bucket is dropped (see above).
  void drop_borrowed_gradients();
  std::size_t bucket_count() const { return buckets_.size(); }
  // Bytes of gradient buffers this rank holds now (its buckets, and other
  // ranks' buckets in transit).
  std::int64_t held_bytes() const;
  // Transit buffers of other ranks' buckets held at once (owners set).
  static constexpr std::size_t kForeignInFlight = 2;
  // A transit buffer this large is reduced before backward goes on: held
  // while backward makes the next large gradient, it would add its size to
  // this rank's peak (a 5120 x 5120 matrix's: 105 MB), for the reduce's time.
  static constexpr std::size_t kLargeTransitBytes = std::size_t{32} << 20;
  // PowerSGD's state for checkpoints (empty without PowerSGD).
  std::string compression_state() const { return powersgd_ ? powersgd_->state() : std::string(); }
  void load_compression_state(const std::string& bytes);

 private:
  struct Bucket {
    std::vector<std::size_t> params;  // indices into params_
    std::vector<std::int64_t> offsets;
    torch::Tensor flat;  // the slots of its parameters, one after the other (foreign: in transit only)
    torch::Tensor wire;  // float16 copy sent instead of flat (compression), else undefined
    std::size_t pending = 0;  // gradients still to arrive this step
    bool deferred = false;    // PowerSGD's matrices: reduced by finish() alone
    bool foreign = false;     // another rank owns it: its .grad is dropped once in the bucket
    bool borrowed = false;    // this rank's, one parameter: flat is its .grad, from backward to the step
    c10::intrusive_ptr<c10d::Work> work;
  };
  void on_accumulated(std::size_t index);
  torch::Tensor gather(std::size_t index);
  static void copy_or_zero(torch::Tensor& into, const torch::Tensor& grad);
  void put_in_transit(std::size_t index);
  void borrow(std::size_t index);
  static bool can_be_bucket(const torch::Tensor& p, const torch::Tensor& grad);
  void release_oldest_in_transit();
  std::int64_t numel_of(const Bucket& b) const;
  void mark_ready(std::size_t index);
  void launch_ready_buckets();
  void reset();
  void add_to_bucket(std::size_t index, std::size_t& bytes, const ReducerOptions& options);
  void place_in_last_bucket(std::size_t index);
  void reduce_deferred(Bucket& b);

  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  std::vector<torch::Tensor> params_;
  std::vector<std::size_t> bucket_of_, position_in_bucket_;
  std::vector<bool> ready_;
  std::vector<torch::Tensor> slots_;  // each parameter's gradient, on its bucket's storage
  std::vector<Bucket> buckets_;
  std::size_t next_launch_ = 0;
  std::size_t launchable_ = 0;  // buckets launched as they fill (all but a deferred one)
  std::unique_ptr<PowerSgd> powersgd_;
  bool enabled_ = true;
  bool overlap_ = true;
  std::vector<int> owners_;  // empty: every gradient to every rank
  std::deque<std::size_t> in_transit_;  // foreign buckets launched and still held, oldest first
  std::string who_;
  double world_;
  // Last: removed first, so that no hook outlives what it calls.
  std::vector<std::unique_ptr<skein::torch_compat::AccumulatedGradHook>> hooks_;
};

}  // namespace skein_parallel
