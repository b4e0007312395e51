#pragma once
// A sharded optimizer (a parallel wrapper that is a skein::ShardedOptimizer,
// such as zero): which parameters this rank's optimizer steps, and the whole
// optimizer's state a checkpoint holds, consolidated from every rank's shard
// and split again on resume. The whole optimizer is the one an unsharded run
// writes (the optimizer factory's over every parameter), so a checkpoint of
// a sharded run resumes under any wrapper, and the other way round.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "skein/detail/export.hpp"
#include "skein/optimizer.hpp"
#include "skein/parallel.hpp"
#include "skein/training/engine/step_pieces.hpp"

namespace skein::core {

// Who owns what of `params`, checked: ShardedInSpans::parameter_spans
// (`cut`: whether the optimizer is elementwise), else each parameter whole
// (ShardedOptimizer::parameter_owners). Empty when `parallel` is no
// ShardedOptimizer.
SKEIN_EXPORT std::vector<ParameterSpan> shard_spans(Parallel& parallel, const std::vector<torch::Tensor>& params,
                                                    int world_size, bool cut);

// Each of `params` one span, owned by owners[i].
SKEIN_EXPORT std::vector<ParameterSpan> whole_spans(const std::vector<torch::Tensor>& params,
                                                    const std::vector<int>& owners);

// The spans `rank` owns, in order.
SKEIN_EXPORT std::vector<ParameterSpan> owned_spans(const std::vector<ParameterSpan>& spans, int rank);

// params[i] for which owners[i] == rank, in their order (all of them when
// owners is empty).
SKEIN_EXPORT std::vector<torch::Tensor> owned_parameters(const std::vector<torch::Tensor>& params,
                                                         const std::vector<int>& owners, int rank);

// Each parameter group's options of `from` into `to`'s group of the same
// place (the learning rate a scheduler changed, say); nothing when they have
// other numbers of groups.
SKEIN_EXPORT void copy_group_options(const torch::optim::Optimizer& from, torch::optim::Optimizer& to);

// Where consolidated_optimizer finds each rank's shard.
struct ShardSource {
  int rank = 0;  // this rank: its states are shared with the running optimizer
  int world_size = 1;
  // Loads rank r's optimizer as saved (joined_shard) into `archive`, its
  // tensors onto `device`; asked once for every other rank, one after the
  // other, so that one rank's states are held at a time.
  std::function<void(int rank, torch::serialize::InputArchive& archive, const torch::Device& device)> load;
};

// This rank's optimizer: what it steps (its own parameters, the large ones
// in pieces) and the optimizer over those pieces' tensors.
struct RunningShard {
  torch::optim::Optimizer& optimizer;
  const StepPieces& pieces;
};

// The whole optimizer over `params`, made by `factory`, holding each
// parameter's state: this rank's shared with its running optimizer (the
// same tensors, not copies), every other rank's loaded from its shard
// (joined_shard's bytes); a parameter owned in spans has its spans' states
// copied into one of its shape. A cut unit's state is its pieces' joined;
// the running pieces' state tensors become views of the joined ones, so
// that the next checkpoint copies nothing. Its parameter groups' options
// are the running optimizer's (the same on every rank). Optimizer::save of it
// writes what an unsharded run saves.
SKEIN_EXPORT std::unique_ptr<torch::optim::Optimizer> consolidated_optimizer(
    OptimizerFactory& factory, const RunningShard& running, const std::vector<torch::Tensor>& params,
    const std::vector<ParameterSpan>& spans, const ShardSource& shards);

// This rank's optimizer as a checkpoint's shard: over its units
// (`running.pieces.unit_tensors()`: its whole parameters and its spans),
// each unit's whole state; a cut one's joined from its pieces', which then
// lie over the joined tensors. What rank r saves for consolidated_optimizer's
// `shards.load(r, ...)`.
SKEIN_EXPORT std::unique_ptr<torch::optim::Optimizer> joined_shard(OptimizerFactory& factory,
                                                                   const RunningShard& running);

// Lays each cut parameter's per-element states in `running` out whole: one
// tensor of the parameter's shape per state field, the pieces' tensors over
// it, as joined_shard leaves them (those already so are left), one field at
// a time. Called after every step: the one that made the states copies them
// once, while training holds little, so that no checkpoint holds them twice.
// Returns whether it copied anything.
SKEIN_EXPORT bool lay_piece_states_whole(const OptimizerFactory& factory, const RunningShard& running);

// The bytes of `optimizer`'s per-element state tensors (each storage once:
// pieces lie over their parameter's), when `factory` names them (a
// skein::ElementwiseOptimizer); nullopt otherwise. What a rank's optimizer
// holds: under zero about 1/W of ddp's.
SKEIN_EXPORT std::optional<std::size_t> elementwise_state_bytes(const OptimizerFactory& factory,
                                                                torch::optim::Optimizer& optimizer);

// A copy of `optimizer` (over `params`, made by `factory`) over `copies`
// (params' copies, in order), for a checkpoint written while training goes
// on: each parameter's state with its per-element tensors copied to the CPU
// (its other members, such as Adam's step count, as they are) and the
// groups' options. nullptr when `factory` does not name the state's tensors
// (not a skein::ElementwiseOptimizer).
SKEIN_EXPORT std::unique_ptr<torch::optim::Optimizer> copied_optimizer(OptimizerFactory& factory,
                                                                       const torch::optim::Optimizer& optimizer,
                                                                       const std::vector<torch::Tensor>& params,
                                                                       const std::vector<torch::Tensor>& copies);

// Loads a whole optimizer (`archive`, over `params`) into `own`, this
// rank's shard: the states of the parameters it steps, nothing else, a cut
// parameter's split into its pieces' (views of the loaded tensors; copies
// where it owns a span only); and into `mirror`, when given, the shard of
// another owner this rank also steps (optimizer_mirror.hpp).
SKEIN_EXPORT void load_optimizer_shard(OptimizerFactory& factory, const RunningShard& own,
                                       const std::vector<torch::Tensor>& params,
                                       torch::serialize::InputArchive& archive,
                                       const RunningShard* mirror = nullptr);

}  // namespace skein::core
