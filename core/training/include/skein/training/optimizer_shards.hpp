#pragma once
// A sharded optimizer (a parallel wrapper that is a skein::ShardedOptimizer,
// such as zero): which parameters this rank's optimizer steps, and the whole
// optimizer's state a checkpoint holds, consolidated from every rank's shard
// and split again on resume. The whole optimizer is the one an unsharded run
// writes (the optimizer factory's over every parameter), so a checkpoint of
// a sharded run resumes under any wrapper, and the other way round.
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "skein/detail/export.hpp"
#include "skein/optimizer.hpp"
#include "skein/parallel.hpp"

namespace skein::core {

// The owner of each of `params` (ShardedOptimizer::parameter_owners),
// checked: one rank in [0, world_size) per parameter. Empty when `parallel`
// is no ShardedOptimizer.
SKEIN_EXPORT std::vector<int> parameter_owners(Parallel& parallel, const std::vector<torch::Tensor>& params,
                                               int world_size);

// params[i] for which owners[i] == rank, in their order (all of them when
// owners is empty).
SKEIN_EXPORT std::vector<torch::Tensor> owned_parameters(const std::vector<torch::Tensor>& params,
                                                         const std::vector<int>& owners, int rank);

// The bytes of the whole optimizer (OutputArchive, as Optimizer::save writes
// it) over `params`, made by `factory`, holding each parameter's state from
// its owner's shard: shards[r] is rank r's optimizer as saved. Its parameter
// groups' options are `running`'s (this rank's: the same on every rank).
SKEIN_EXPORT std::string consolidated_optimizer(OptimizerFactory& factory, const torch::optim::Optimizer& running,
                                                const std::vector<torch::Tensor>& params,
                                                const std::vector<int>& owners,
                                                const std::vector<std::string>& shards);

// Loads a whole optimizer (`archive`, over `params`) into `own`, this
// rank's shard: the states of the parameters `own` steps, nothing else.
SKEIN_EXPORT void load_optimizer_shard(OptimizerFactory& factory, torch::optim::Optimizer& own,
                                       const std::vector<torch::Tensor>& params,
                                       torch::serialize::InputArchive& archive);

}  // namespace skein::core
