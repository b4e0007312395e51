#pragma once
// Live recovery under a sharded optimizer (zero): each rank steps, besides
// its own shard, the shard of the next rank in the ring (rank r mirrors
// r + 1 mod W) with the same gradients, the same options and the same
// state, so that both hold that shard's state as of the same step and a lost
// rank's optimizer state lives on in its neighbour. No communication: under
// stage 1 every rank has every gradient. The cost: a rank holds and steps
// about 2/W of the optimizer instead of 1/W (all of it at W = 2).
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/optim/optimizer.h>

#include "skein/detail/export.hpp"
#include "skein/optimizer.hpp"
#include "skein/parallel.hpp"
#include "skein/training/engine/optimizer_shards.hpp"
#include "skein/training/engine/step_pieces.hpp"

namespace skein::core {

class SKEIN_EXPORT ShardMirror {
 public:
  ShardMirror() = default;  // inactive: no shard mirrored
  // The shard `spans` say `owner` steps, made by `factory` over `params`
  // (the model's), cut in pieces of `piece_elements` (0: uncut).
  ShardMirror(OptimizerFactory& factory, const std::vector<torch::Tensor>& params,
              const std::vector<ParameterSpan>& spans, int owner, std::int64_t piece_elements);
  bool active() const { return optimizer_ != nullptr; }
  int owner() const { return owner_; }
  // The owner's step, after this rank's own (`running`, whose group options,
  // a scheduled learning rate say, it takes first).
  void step(const torch::optim::Optimizer& running);
  RunningShard shard() { return {*optimizer_, pieces_}; }

 private:
  int owner_ = -1;
  StepPieces pieces_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace skein::core
