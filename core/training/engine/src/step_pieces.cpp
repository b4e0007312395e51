#include "skein/training/engine/step_pieces.hpp"

#include <algorithm>

#include <c10/util/strides.h>

namespace skein::core {

torch::Tensor shaped_over(const torch::Tensor& t, std::int64_t offset, c10::IntArrayRef shape) {
  torch::NoGradGuard no_grad;
  return torch::empty({0}, t.options().requires_grad(false))
      .set_(t.storage(), t.storage_offset() + offset, shape, c10::contiguous_strides(shape));
}

torch::Tensor flat_over(const torch::Tensor& t, std::int64_t offset, std::int64_t length) {
  return shaped_over(t, offset, {length});
}

bool lies_over(const torch::Tensor& piece, const torch::Tensor& t, std::int64_t offset) {
  return piece.storage().unsafeGetStorageImpl() == t.storage().unsafeGetStorageImpl() &&
         piece.storage_offset() == t.storage_offset() + offset;
}

StepPieces::StepPieces(std::vector<torch::Tensor> params, std::int64_t max_elements)
    : params_(std::move(params)), max_elements_(max_elements) {
  for (std::size_t i = 0; i < params_.size(); ++i) add_unit(i, 0, params_[i].numel());
}

StepPieces::StepPieces(const std::vector<torch::Tensor>& all, const std::vector<ParameterSpan>& spans,
                       std::int64_t max_elements)
    : max_elements_(max_elements) {
  for (const auto& span : spans) {
    if (params_.empty() || !params_.back().is_same(all.at(span.param))) params_.push_back(all[span.param]);
    add_unit(params_.size() - 1, span.offset, span.length);
  }
}

// Elements [offset, offset + length) of params_[i] as a unit, in pieces.
void StepPieces::add_unit(std::size_t i, std::int64_t offset, std::int64_t length) {
  const auto& p = params_[i];
  const bool whole = offset == 0 && length == p.numel();
  const std::size_t unit = units_.size();
  units_.push_back({i, offset, length, whole ? p : flat_over(p, offset, length), whole});
  // Cut only what can be: a parameter laid out as one flat run of elements.
  if (whole && (max_elements_ <= 0 || length <= max_elements_ || !p.is_contiguous())) {
    pieces_.push_back({i, 0, length, p, true, unit});
    return;
  }
  const std::int64_t most = max_elements_ > 0 ? max_elements_ : length;
  for (std::int64_t at = 0; at < length; at += most) {
    const std::int64_t n = std::min(most, length - at);
    pieces_.push_back({i, offset + at, n, flat_over(p, offset + at, n), false, unit});
  }
  cuts_any_ = true;
}

std::vector<torch::Tensor> StepPieces::unit_tensors() const {
  std::vector<torch::Tensor> out;
  out.reserve(units_.size());
  for (const auto& unit : units_) out.push_back(unit.tensor);
  return out;
}

std::vector<torch::Tensor> StepPieces::tensors() const {
  std::vector<torch::Tensor> out;
  out.reserve(pieces_.size());
  for (const auto& piece : pieces_) out.push_back(piece.tensor);
  return out;
}

void StepPieces::after_zero_grad() const {
  if (!cuts_any_) return;
  torch::NoGradGuard no_grad;
  for (std::size_t k = 0; k < pieces_.size(); ++k) {
    const auto& piece = pieces_[k];
    if (piece.whole || (k > 0 && pieces_[k - 1].param == piece.param)) continue;  // once per cut parameter
    auto& p = params_[piece.param];
    if (!piece.tensor.grad().defined()) {  // set to none, as libtorch 2.x does
      p.mutable_grad() = torch::Tensor();
      continue;
    }
    // Zeroed in place (libtorch 1.13): through the pieces, when they still
    // lie over the parameter's gradient and this rank owns all of it.
    const auto& grad = p.grad();
    if (!grad.defined()) continue;
    const bool through_pieces = units_[piece.unit].whole && grad.is_contiguous() &&
                                lies_over(piece.tensor.grad(), grad, piece.offset);
    if (!through_pieces) grad.zero_();
  }
  for (const auto& piece : pieces_)
    if (!piece.whole) piece.tensor.mutable_grad() = torch::Tensor();
}

void StepPieces::before_step() const {
  if (!cuts_any_) return;
  torch::NoGradGuard no_grad;
  for (const auto& piece : pieces_) {
    if (piece.whole) continue;
    const auto& p = params_[piece.param];
    const auto& tensor = piece.tensor;  // set_ keeps its TensorImpl, the optimizer's key
    if (!lies_over(tensor, p, piece.offset)) tensor.set_(p.storage(), p.storage_offset() + piece.offset, {piece.length}, {1});
    // Over the gradient's storage, or a copy of a strided one.
    const auto& grad = p.grad();
    if (!grad.defined())
      tensor.mutable_grad() = torch::Tensor();
    else if (grad.is_contiguous())
      tensor.mutable_grad() = flat_over(grad, piece.offset, piece.length);
    else
      tensor.mutable_grad() = grad.reshape({-1}).narrow(0, piece.offset, piece.length).clone();
  }
}

}  // namespace skein::core
