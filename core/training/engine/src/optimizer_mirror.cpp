#include "skein/training/engine/optimizer_mirror.hpp"

namespace skein::core {

ShardMirror::ShardMirror(OptimizerFactory& factory, const std::vector<torch::Tensor>& params,
                         const std::vector<ParameterSpan>& spans, int owner, std::int64_t piece_elements)
    : owner_(owner), pieces_(params, owned_spans(spans, owner), piece_elements) {
  optimizer_ = factory.create(pieces_.tensors());
}

void ShardMirror::step(const torch::optim::Optimizer& running) {
  copy_group_options(running, *optimizer_);
  pieces_.before_step();
  optimizer_->step();
  // The pieces' gradients are views of their parameters' (kept alive else).
  for (const auto& piece : pieces_.pieces())
    if (!piece.whole && piece.tensor.grad().defined()) piece.tensor.mutable_grad() = torch::Tensor();
}

}  // namespace skein::core
