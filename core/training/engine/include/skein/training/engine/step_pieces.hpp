#pragma once
// What this rank's optimizer steps: its parameters, the large ones cut into
// flat pieces when the optimizer is elementwise (skein::ElementwiseOptimizer)
// and the parallel wrapper shards it. Each piece is a tensor over its
// parameter's storage that the optimizer holds as a parameter of its own, so
// a step's temporaries are a piece's: Adam's square root and quotient of a
// 5120 x 5120 matrix are 210 MB, of a piece 8 MB. Checkpoints still hold
// each parameter's whole state (optimizer_shards.hpp joins the pieces').
#include <cstddef>
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "skein/detail/export.hpp"
#include "skein/parallel.hpp"

namespace skein::core {

// The most elements of a piece: 4 MB of float.
constexpr std::int64_t kStepPieceElements = std::int64_t{1} << 20;

// One tensor the optimizer steps: a whole parameter, or `length` elements of
// it from `offset` (in its flattened order).
struct StepPiece {
  std::size_t param = 0;  // index in StepPieces::params()
  std::int64_t offset = 0, length = 0;
  torch::Tensor tensor;   // the parameter itself when whole
  bool whole = true;
  std::size_t unit = 0;   // index in StepPieces::units(): what it is a piece of
};

// What this rank owns of one parameter: all of it, or a span of it (a
// parameter owned in parts, skein::ShardedInSpans). A shard's states are
// the units': a whole parameter's of its shape, a span's flat.
struct StepUnit {
  std::size_t param = 0;  // index in StepPieces::params()
  std::int64_t offset = 0, length = 0;
  torch::Tensor tensor;   // the parameter itself when whole, else a flat tensor over the span
  bool whole = true;
};

// `length` elements of `t`'s storage from element `offset` of `t` (which
// must be contiguous), as a flat tensor of its own: not a view made by
// narrow(), which Tensor::set_ and libtorch 1.13's zero_grad (detach_) refuse.
SKEIN_EXPORT torch::Tensor flat_over(const torch::Tensor& t, std::int64_t offset, std::int64_t length);
// The same, contiguous in `shape`, from element `offset` of `t`.
SKEIN_EXPORT torch::Tensor shaped_over(const torch::Tensor& t, std::int64_t offset, c10::IntArrayRef shape);
// Whether `piece` lies over `t`'s storage from element `offset` of `t`.
SKEIN_EXPORT bool lies_over(const torch::Tensor& piece, const torch::Tensor& t, std::int64_t offset);

class SKEIN_EXPORT StepPieces {
 public:
  StepPieces() = default;
  // `params` in order, each one piece of itself when it has at most
  // `max_elements` elements (or max_elements is 0), else cut into pieces of
  // max_elements (the last one shorter).
  StepPieces(std::vector<torch::Tensor> params, std::int64_t max_elements);
  // The `spans` of `all` (the model's parameters) that this rank owns, in
  // order, each cut as above (a span is never one piece of a parameter's
  // own: it is cut in pieces of at most max_elements, or left one piece when
  // max_elements is 0).
  StepPieces(const std::vector<torch::Tensor>& all, const std::vector<ParameterSpan>& spans,
             std::int64_t max_elements);

  // The parameters this rank steps, wholly or in part, in order.
  const std::vector<torch::Tensor>& params() const { return params_; }
  const std::vector<StepUnit>& units() const { return units_; }
  // The units' tensors, in order: what a shard's states are kept over.
  std::vector<torch::Tensor> unit_tensors() const;
  std::int64_t max_elements() const { return max_elements_; }
  const std::vector<StepPiece>& pieces() const { return pieces_; }
  // The pieces' tensors, in order: what the optimizer is made over.
  std::vector<torch::Tensor> tensors() const;
  bool cuts_any() const { return cuts_any_; }

  // After the optimizer's zero_grad: each cut parameter's gradient as the
  // optimizer left its pieces' (reset, or zeroed).
  void after_zero_grad() const;
  // Before the optimizer's step: each piece lies over its parameter's
  // storage (a restore may have moved it) and its gradient is its slice of
  // the parameter's (none when the parameter has none).
  void before_step() const;

 private:
  void add_unit(std::size_t param, std::int64_t offset, std::int64_t length);

  std::vector<torch::Tensor> params_;
  std::vector<StepUnit> units_;
  std::vector<StepPiece> pieces_;
  std::int64_t max_elements_ = 0;
  bool cuts_any_ = false;
};

}  // namespace skein::core
