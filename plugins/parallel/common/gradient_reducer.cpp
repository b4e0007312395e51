#include "gradient_reducer.hpp"

#include <stdexcept>
#include <string>

#include <c10/util/strides.h>

#include "skein/errors.hpp"

namespace skein_parallel {

void collective(const std::string& who, const char* what, const std::function<void()>& run) {
  try {
    run();
  } catch (const std::exception& e) {
    throw std::runtime_error(who + ": " + what +
                             " failed: a peer died or did not answer within the run's timeout (" +
                             skein::first_line(e.what()) + ")");
  }
}

void wait_for(c10d::Work& work, const std::string& who, const char* what) {
  bool done = false;
  collective(who, what, [&] { done = work.wait(); });
  if (!done) throw std::runtime_error(who + ": " + what + " did not complete");
}

// Appends parameter `index` to the last bucket, or to a new one when the last
// is full, of another dtype or (owners set) of another owner.
void GradientReducer::add_to_bucket(std::size_t index, std::size_t& bytes, const ReducerOptions& options) {
  const auto& p = params_[index];
  const std::size_t cap = buckets_.size() <= 1 ? options.first_cap_bytes : options.cap_bytes;
  const std::size_t size = static_cast<std::size_t>(p.numel()) * p.element_size();
  const std::size_t front = buckets_.empty() || buckets_.back().params.empty() ? index : buckets_.back().params.front();
  const bool full = front != index && (bytes + size > cap || params_[front].scalar_type() != p.scalar_type() ||
                                       (!owners_.empty() && owners_[front] != owners_[index]));
  if (buckets_.empty() || full) {
    buckets_.emplace_back();
    bytes = 0;
  }
  place_in_last_bucket(index);
  bytes += size;
}

void GradientReducer::place_in_last_bucket(std::size_t index) {
  auto& b = buckets_.back();
  bucket_of_[index] = buckets_.size() - 1;
  position_in_bucket_[index] = b.params.size();
  b.offsets.push_back(b.params.empty() ? 0 : b.offsets.back() + params_[b.params.back()].numel());
  b.params.push_back(index);
}

GradientReducer::GradientReducer(c10::intrusive_ptr<c10d::ProcessGroup> group,
                                 std::vector<torch::Tensor> params, const ReducerOptions& options)
    : group_(std::move(group)), params_(std::move(params)), overlap_(options.overlap), owners_(options.owners),
      who_(options.who), world_(group_->getSize()) {
  if (!owners_.empty() && (owners_.size() != params_.size() || options.fp16 || options.powersgd))
    throw std::logic_error("GradientReducer: owners must name one rank per parameter, without compression");
  bucket_of_.resize(params_.size());
  position_in_bucket_.resize(params_.size());
  ready_.assign(params_.size(), false);
  std::vector<std::size_t> matrices;  // PowerSGD's, in registration order
  auto compressed = [&](const torch::Tensor& p) {
    return options.powersgd && p.scalar_type() == torch::kFloat32 && PowerSgd::pays(p.sizes(), *options.powersgd);
  };
  for (std::size_t k = 0; k < params_.size(); ++k)
    if (compressed(params_[k])) matrices.push_back(k);
  std::size_t bytes = 0;
  for (std::size_t k = params_.size(); k-- > 0;)
    if (!compressed(params_[k])) add_to_bucket(k, bytes, options);
  launchable_ = buckets_.size();
  if (!matrices.empty()) {
    std::vector<std::vector<std::int64_t>> shapes;
    buckets_.emplace_back();
    buckets_.back().deferred = true;
    for (std::size_t k : matrices) {
      place_in_last_bucket(k);
      shapes.push_back(params_[k].sizes().vec());
    }
    powersgd_ = std::make_unique<PowerSgd>(group_, shapes, *options.powersgd, params_[matrices.front()].device());
  }
  const int rank = group_->getRank();
  torch::NoGradGuard no_grad;
  for (auto& b : buckets_) {
    const auto& last = params_[b.params.back()];
    b.foreign = !owners_.empty() && owners_[b.params.front()] != rank && owners_[b.params.front()] != kEveryRank;
    b.borrowed = !owners_.empty() && !b.foreign && b.params.size() == 1 && !b.deferred;
    if (b.foreign || b.borrowed) continue;  // in transit only (put_in_transit), or .grad itself (borrow)
    b.flat = torch::empty({numel_of(b)}, last.options().requires_grad(false));
    const auto type = last.scalar_type();
    if (options.fp16 && (type == torch::kFloat32 || type == torch::kFloat64))
      b.wire = torch::empty(b.flat.sizes(), b.flat.options().dtype(torch::kFloat16));
  }
  // Each parameter's slot: a tensor of its shape on its bucket's storage,
  // not an autograd view of it. Made once; .grad becomes it.
  for (std::size_t k = 0; k < params_.size(); ++k) {
    const auto& b = buckets_[bucket_of_[k]];
    const auto& p = params_[k];
    if (b.foreign || b.borrowed) {
      slots_.emplace_back();
      continue;
    }
    auto s = torch::empty({0}, b.flat.options());
    s.set_(b.flat.storage(), b.offsets[position_in_bucket_[k]], p.sizes(), c10::contiguous_strides(p.sizes()));
    slots_.push_back(s);
  }
  reset();
  for (std::size_t k = 0; k < params_.size(); ++k)
    hooks_.push_back(
        std::make_unique<skein::torch_compat::AccumulatedGradHook>(params_[k], [this, k] { on_accumulated(k); }));
}

std::int64_t GradientReducer::numel_of(const Bucket& b) const {
  return b.offsets.back() + params_[b.params.back()].numel();
}

std::int64_t GradientReducer::held_bytes() const {
  std::int64_t bytes = 0;
  for (const auto& b : buckets_) {
    if (b.flat.defined()) bytes += b.flat.numel() * static_cast<std::int64_t>(b.flat.element_size());
    if (b.wire.defined()) bytes += b.wire.numel() * static_cast<std::int64_t>(b.wire.element_size());
  }
  return bytes;
}

// `grad` into `into` (of its elements, in any shape), or zeros without one.
void GradientReducer::copy_or_zero(torch::Tensor& into, const torch::Tensor& grad) {
  if (grad.defined())
    into.copy_(grad.reshape(into.sizes()));
  else
    into.zero_();
}

void GradientReducer::reset() {
  std::fill(ready_.begin(), ready_.end(), false);
  for (auto& b : buckets_) {
    b.pending = b.params.size();
    b.work.reset();
  }
  next_launch_ = 0;
}

// The slot of parameter `index`, holding its gradient: .grad itself when it
// is the slot, else .grad copied in (zeros when it has none).
torch::Tensor GradientReducer::gather(std::size_t index) {
  torch::NoGradGuard no_grad;
  auto& s = slots_[index];
  const auto& grad = params_[index].grad();
  const bool in_place = grad.defined() && grad.data_ptr() == s.data_ptr() && grad.sizes() == s.sizes() &&
                        grad.strides() == s.strides() && grad.scalar_type() == s.scalar_type();
  if (!in_place) copy_or_zero(s, grad);
  return s;
}

// Parameter `index`'s gradient of this step is in its slot (or in transit
// to its owner): .grad becomes the slot (a parameter without one keeps
// none; another rank's drops its own), and the bucket has one gradient less
// to wait for.
void GradientReducer::mark_ready(std::size_t index) {
  auto& p = params_[index];
  auto& b = buckets_[bucket_of_[index]];
  if (b.foreign) {
    put_in_transit(index);
  } else if (b.borrowed) {
    borrow(index);
  } else {
    const bool had = p.grad().defined();
    auto s = gather(index);
    if (had) p.mutable_grad() = s;
  }
  ready_[index] = true;
  --b.pending;
}

// Another rank's parameter: its gradient joins its bucket's transit buffer
// (is that buffer itself, when alone in the bucket and laid out as one) and
// .grad is dropped: this rank's share is spent once reduced to the owner.
void GradientReducer::put_in_transit(std::size_t index) {
  torch::NoGradGuard no_grad;
  auto& p = params_[index];
  auto& b = buckets_[bucket_of_[index]];
  const torch::Tensor grad = p.grad();
  if (b.params.size() == 1 && can_be_bucket(p, grad)) {
    b.flat = grad.view({-1});
  } else {
    if (!b.flat.defined()) b.flat = torch::empty({numel_of(b)}, p.options().requires_grad(false));
    auto part = b.flat.narrow(0, b.offsets[position_in_bucket_[index]], p.numel());
    copy_or_zero(part, grad);
  }
  p.mutable_grad() = torch::Tensor();
}

// This rank's parameter alone in its bucket: the bucket is its .grad, when
// laid out as one, else a buffer the gradient is copied into (zeros without
// one, which becomes .grad after the reduce only if another rank had one).
void GradientReducer::borrow(std::size_t index) {
  torch::NoGradGuard no_grad;
  auto& p = params_[index];
  auto& b = buckets_[bucket_of_[index]];
  const torch::Tensor grad = p.grad();
  if (can_be_bucket(p, grad)) {
    b.flat = grad.view({-1});
    return;
  }
  b.flat = torch::empty({p.numel()}, p.options().requires_grad(false));
  copy_or_zero(b.flat, grad);
  if (grad.defined()) p.mutable_grad() = b.flat.view(p.sizes());
}

void GradientReducer::drop_borrowed_gradients() {
  for (const auto& b : buckets_)
    if (b.borrowed) params_[b.params.front()].mutable_grad() = torch::Tensor();
}

// Whether parameter `p`'s gradient can be its one-parameter bucket's buffer
// itself: laid out as one flat run, of the parameter's dtype and device.
bool GradientReducer::can_be_bucket(const torch::Tensor& p, const torch::Tensor& grad) {
  return grad.defined() && grad.is_contiguous() && grad.scalar_type() == p.scalar_type() && grad.device() == p.device();
}

// Waits for the oldest foreign bucket in transit and lets its buffer go.
void GradientReducer::release_oldest_in_transit() {
  auto& b = buckets_[in_transit_.front()];
  in_transit_.pop_front();
  wait_for(*b.work, who_, "gradient reduce");
  b.work.reset();
  b.flat = torch::Tensor();
}

// After autograd accumulated a gradient into parameter `index`'s .grad.
void GradientReducer::on_accumulated(std::size_t index) {
  if (ready_[index]) return;
  if (!enabled_) {  // accumulating: keep it in the slot (another rank's, or a borrowed one: in .grad), launch nothing
    const auto& b = buckets_[bucket_of_[index]];
    if (!b.foreign && !b.borrowed) params_[index].mutable_grad() = gather(index);
    return;
  }
  mark_ready(index);
  if (overlap_) launch_ready_buckets();
}

void GradientReducer::launch_ready_buckets() {
  torch::NoGradGuard no_grad;
  while (next_launch_ < launchable_ && buckets_[next_launch_].pending == 0) {
    const std::size_t index = next_launch_++;
    auto& b = buckets_[index];
    // Compression divides by the world size BEFORE the cast to float16, in
    // the bucket's own dtype: one rounding to half instead of two, and every
    // partial sum of the all-reduce is then at most the largest gradient
    // magnitude of any rank, so nothing overflows while every rank's
    // gradients lie within float16's range (|g| <= 65504); summing first and
    // dividing after would overflow as soon as the sum exceeds it.
    b.flat.div_(world_);
    if (b.wire.defined()) b.wire.copy_(b.flat);
    std::vector<torch::Tensor> tensors{b.wire.defined() ? b.wire : b.flat};
    if (owners_.empty() || owners_[b.params.front()] == kEveryRank) {
      b.work = group_->allreduce(tensors);
    } else {
      c10d::ReduceOptions to_owner;
      to_owner.rootRank = owners_[b.params.front()];
      b.work = group_->reduce(tensors, to_owner);
      if (b.foreign) {
        in_transit_.push_back(index);
        const auto bytes = static_cast<std::size_t>(b.flat.numel()) * b.flat.element_size();
        if (bytes >= kLargeTransitBytes)
          while (!in_transit_.empty()) release_oldest_in_transit();
        else if (in_transit_.size() > kForeignInFlight)
          release_oldest_in_transit();
      }
    }
  }
}

void GradientReducer::finish() {
  // Parameters that got no gradient this step (unused in forward) contribute
  // what they hold, so their buckets launch and no rank waits forever.
  for (std::size_t k = 0; k < params_.size(); ++k)
    if (!ready_[k]) mark_ready(k);
  launch_ready_buckets();
  torch::NoGradGuard no_grad;
  for (auto& b : buckets_)
    if (b.deferred) reduce_deferred(b);
  while (!in_transit_.empty()) release_oldest_in_transit();  // every other rank's bucket
  for (auto& b : buckets_) {
    if (!b.work) continue;  // reduced by PowerSGD already, or released
    wait_for(*b.work, who_, owners_.empty() ? "gradient all-reduce" : "gradient reduce");
    if (b.wire.defined()) b.flat.copy_(b.wire);  // back to the parameters' dtype
  }
  if (powersgd_) powersgd_->step_done();
  // A parameter without a gradient on this rank gets the average when
  // another rank had one; unused on every rank, it keeps none, as in a
  // single process.
  for (std::size_t k = 0; k < params_.size(); ++k) {
    auto& p = params_[k];
    const auto& b = buckets_[bucket_of_[k]];
    if (p.grad().defined() || b.foreign) continue;
    const auto averaged = b.borrowed ? b.flat.view(p.sizes()) : slots_[k];
    if (averaged.count_nonzero().item<std::int64_t>() > 0) p.mutable_grad() = averaged;
  }
  for (auto& b : buckets_)
    if (b.borrowed) b.flat = torch::Tensor();  // .grad holds it now, until drop_borrowed_gradients
  reset();
}

// PowerSGD's bucket, after every other bucket was launched: during the
// warm-up an all-reduce of its own, then the low-rank reduction.
void GradientReducer::reduce_deferred(Bucket& b) {
  if (powersgd_->warming_up()) {
    b.flat.div_(world_);
    std::vector<torch::Tensor> tensors{b.flat};
    b.work = group_->allreduce(tensors);
    return;
  }
  std::vector<torch::Tensor> grads;
  for (std::size_t index : b.params) grads.push_back(slots_[index]);
  powersgd_->reduce(grads);
}

void GradientReducer::load_compression_state(const std::string& bytes) {
  if (!powersgd_ || bytes.empty()) return;  // compression changed on resume: start afresh
  powersgd_->load_state(bytes);
}

}  // namespace skein_parallel
