#include "powersgd.hpp"

#include <sstream>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize.h>

#include "gradient_reducer.hpp"

namespace skein_parallel {

namespace {

// Fixed, so that every rank draws the same initial Q without touching the
// global generator (whose state a checkpoint restores per rank).
constexpr std::uint64_t kInitialQSeed = 0x9e3779b97f4a7c15ull;

// Modified Gram-Schmidt on the columns of m (rows x r), in place. The small
// epsilon keeps a zero column (a parameter without gradient) finite.
void orthonormalize(torch::Tensor& m) {
  const std::int64_t r = m.size(1);
  for (std::int64_t i = 0; i < r; ++i) {
    auto col = m.narrow(1, i, 1);
    col.div_(col.norm() + 1e-8);
    if (i + 1 < r) {
      auto rest = m.narrow(1, i + 1, r - i - 1);
      rest.sub_((col * rest).sum(0, /*keepdim=*/true) * col);
    }
  }
}

void all_reduce_sum(c10d::ProcessGroup& group, torch::Tensor& t, const char* what) {
  std::vector<torch::Tensor> tensors{t};
  wait_for(*group.allreduce(tensors), "ddp", what);  // PowerSGD is ddp's alone
}

// Views of consecutive pieces of `flat`, each rows[i] x cols[i].
std::vector<torch::Tensor> views_of(const torch::Tensor& flat, const std::vector<std::int64_t>& rows,
                                    const std::vector<std::int64_t>& cols) {
  std::vector<torch::Tensor> views;
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    views.push_back(flat.narrow(0, offset, rows[i] * cols[i]).view({rows[i], cols[i]}));
    offset += rows[i] * cols[i];
  }
  return views;
}

std::int64_t total(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += a[i] * b[i];
  return n;
}

}  // namespace

bool PowerSgd::pays(at::IntArrayRef shape, const PowerSgdOptions& options) {
  if (shape.size() < 2) return false;
  const double n = static_cast<double>(shape[0]);
  double m = 1;
  for (std::size_t d = 1; d < shape.size(); ++d) m *= static_cast<double>(shape[d]);
  return n * m >= options.min_compression_rate * options.rank * (n + m);
}

PowerSgd::PowerSgd(c10::intrusive_ptr<c10d::ProcessGroup> group,
                   const std::vector<std::vector<std::int64_t>>& shapes, const PowerSgdOptions& options,
                   const torch::Device& device)
    : group_(std::move(group)), options_(options) {
  for (const auto& shape : shapes) {
    std::int64_t cols = 1;
    for (std::size_t d = 1; d < shape.size(); ++d) cols *= shape[d];
    rows_.push_back(shape.at(0));
    cols_.push_back(cols);
  }
  const std::vector<std::int64_t> r(rows_.size(), options_.rank);
  const auto on_device = torch::TensorOptions(torch::kFloat32).device(device);
  p_all_ = torch::zeros({total(rows_, r)}, on_device);
  q_all_ = torch::zeros({total(cols_, r)}, on_device);
  error_all_ = torch::zeros({total(rows_, cols_)}, on_device);
  p_ = views_of(p_all_, rows_, r);
  q_ = views_of(q_all_, cols_, r);
  error_ = views_of(error_all_, rows_, cols_);
  auto generator = at::make_generator<at::CPUGeneratorImpl>(kInitialQSeed);
  torch::NoGradGuard no_grad;
  for (auto& q : q_) {
    q.copy_(at::normal(0.0, 1.0, q.sizes(), generator));  // the same Q on every rank and device
    orthonormalize(q);
  }
}

void PowerSgd::reduce(std::vector<torch::Tensor>& grads) {
  if (grads.size() != rows_.size()) throw std::logic_error("PowerSGD: wrong number of gradients");
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> m;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    m.push_back(grads[i].view({rows_[i], cols_[i]}));
    m[i].add_(error_[i]);  // error feedback: what the last approximation missed
    torch::mm_out(p_[i], m[i], q_[i]);
  }
  all_reduce_sum(*group_, p_all_, "PowerSGD all-reduce of P");
  for (auto& p : p_) orthonormalize(p);
  for (std::size_t i = 0; i < m.size(); ++i) torch::mm_out(q_[i], m[i].t(), p_[i]);
  all_reduce_sum(*group_, q_all_, "PowerSGD all-reduce of Q");
  q_all_.div_(static_cast<double>(group_->getSize()));  // P Qᵀ then approximates the average
  for (std::size_t i = 0; i < m.size(); ++i) {
    // error = M - P Qᵀ in one BLAS call (this rank's own, so its rounding
    // need not match other ranks'), then the gradient every rank shares,
    // computed alike everywhere from the same P and Q.
    torch::addmm_out(error_[i], m[i], p_[i], q_[i].t(), /*beta=*/1, /*alpha=*/-1);
    torch::mm_out(m[i], p_[i], q_[i].t());
  }
}

std::string PowerSgd::state() const {
  std::ostringstream out;
  // CPU copies: a checkpoint written on a GPU resumes on the CPU too.
  torch::save(std::vector<torch::Tensor>{torch::tensor({steps_}, torch::kInt64), q_all_.cpu(), error_all_.cpu()}, out);
  return out.str();
}

void PowerSgd::load_state(const std::string& bytes) {
  std::vector<torch::Tensor> saved;
  std::istringstream in(bytes);
  torch::load(saved, in);
  if (saved.size() != 3 || saved[0].numel() != 1 || saved[0].scalar_type() != torch::kInt64)
    throw std::runtime_error("not a PowerSGD state");
  auto fits = [](const torch::Tensor& saved_t, const torch::Tensor& mine) {
    return saved_t.scalar_type() == mine.scalar_type() && saved_t.sizes() == mine.sizes();
  };
  if (!fits(saved[1], q_all_) || !fits(saved[2], error_all_))
    throw std::runtime_error("its PowerSGD state is for other matrices or another rank (Q of " +
                             std::to_string(saved[1].numel()) + " values, this run's " +
                             std::to_string(q_all_.numel()) + ")");
  torch::NoGradGuard no_grad;
  steps_ = saved[0].item<std::int64_t>();
  q_all_.copy_(saved[1]);
  error_all_.copy_(saved[2]);
}

}  // namespace skein_parallel
