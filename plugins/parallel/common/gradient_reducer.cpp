#include "gradient_reducer.hpp"

#include <stdexcept>
#include <string>

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
  for (auto& b : buckets_) {
    const auto& last = params_[b.params.back()];
    b.flat = torch::zeros({b.offsets.back() + last.numel()}, last.options().requires_grad(false));
    const auto type = last.scalar_type();
    if (options.fp16 && (type == torch::kFloat32 || type == torch::kFloat64))
      b.wire = torch::empty(b.flat.sizes(), b.flat.options().dtype(torch::kFloat16));
  }
  reset();
  for (std::size_t k = 0; k < params_.size(); ++k)
    params_[k].register_hook([this, k](torch::Tensor grad) { on_gradient(k, grad); });
}

torch::Tensor GradientReducer::slot(std::size_t index) {
  auto& b = buckets_[bucket_of_[index]];
  const auto& p = params_[index];
  return b.flat.narrow(0, b.offsets[position_in_bucket_[index]], p.numel()).view(p.sizes());
}

void GradientReducer::reset() {
  std::fill(ready_.begin(), ready_.end(), false);
  for (auto& b : buckets_) {
    b.pending = b.params.size();
    b.work.reset();
  }
  next_launch_ = 0;
}

// The gradient a bucket carries: this step's plus what accumulated before.
void GradientReducer::fill(std::size_t index, const torch::Tensor& grad) {
  torch::NoGradGuard no_grad;
  auto s = slot(index);
  const auto& accumulated = params_[index].grad();
  if (grad.defined() && accumulated.defined())
    torch::add_out(s, accumulated, grad);
  else if (grad.defined())
    s.copy_(grad);
  else if (accumulated.defined())
    s.copy_(accumulated);
  else
    s.zero_();
  ready_[index] = true;
  --buckets_[bucket_of_[index]].pending;
}

void GradientReducer::on_gradient(std::size_t index, const torch::Tensor& grad) {
  if (!enabled_ || ready_[index]) return;
  fill(index, grad);
  if (overlap_) launch_ready_buckets();
}

void GradientReducer::launch_ready_buckets() {
  while (next_launch_ < launchable_ && buckets_[next_launch_].pending == 0) {
    auto& b = buckets_[next_launch_++];
    // Compression divides by the world size BEFORE the cast to float16, in
    // the bucket's own dtype: one rounding to half instead of two, and every
    // partial sum of the all-reduce is then at most the largest gradient
    // magnitude of any rank, so nothing overflows while every rank's
    // gradients lie within float16's range (|g| <= 65504); summing first and
    // dividing after would overflow as soon as the sum exceeds it.
    b.flat.div_(world_);
    if (b.wire.defined()) b.wire.copy_(b.flat);
    std::vector<torch::Tensor> tensors{b.wire.defined() ? b.wire : b.flat};
    if (owners_.empty()) {
      b.work = group_->allreduce(tensors);
    } else {
      c10d::ReduceOptions to_owner;
      to_owner.rootRank = owners_[b.params.front()];
      b.work = group_->reduce(tensors, to_owner);
    }
  }
}

void GradientReducer::finish() {
  // Parameters that got no gradient this step (unused in forward) contribute
  // what they hold, so their buckets launch and no rank waits forever.
  std::vector<bool> had_gradient = ready_;
  for (std::size_t k = 0; k < params_.size(); ++k)
    if (!ready_[k]) fill(k, torch::Tensor());
  launch_ready_buckets();
  torch::NoGradGuard no_grad;
  for (auto& b : buckets_)
    if (b.deferred) reduce_deferred(b);
  for (auto& b : buckets_) {
    if (!b.work) continue;  // reduced by PowerSGD already
    wait_for(*b.work, who_, owners_.empty() ? "gradient all-reduce" : "gradient reduce");
    if (b.wire.defined()) b.flat.copy_(b.wire);  // back to the parameters' dtype
  }
  if (powersgd_) powersgd_->step_done();
  const int rank = group_->getRank();
  for (std::size_t k = 0; k < params_.size(); ++k) {
    auto& p = params_[k];
    if (!owners_.empty() && owners_[k] != rank) {
      p.mutable_grad() = torch::Tensor();  // reduced to its owner; this rank's is spent
      continue;
    }
    auto averaged = slot(k);
    if (p.grad().defined()) {
      p.mutable_grad().copy_(averaged);
    } else if (had_gradient[k] || averaged.count_nonzero().item<std::int64_t>() > 0) {
      p.mutable_grad() = averaged.clone();
    }  // else: unused on every rank; like a single process, it keeps no gradient
  }
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
  for (std::size_t index : b.params) grads.push_back(slot(index));
  powersgd_->reduce(grads);
}

void GradientReducer::load_compression_state(const std::string& bytes) {
  if (!powersgd_ || bytes.empty()) return;  // compression changed on resume: start afresh
  powersgd_->load_state(bytes);
}

}  // namespace skein_parallel
