#include "skein/training/optimizer_shards.hpp"

#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <unordered_set>

#include <torch/serialize.h>

namespace skein::core {

namespace {

// libtorch keys an optimizer's per-parameter states by the parameter's
// TensorImpl: as its address printed in 1.13, as the pointer in 2.x.
template <class Map>
typename Map::key_type state_key(const Map&, const torch::Tensor& p) {
  if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
    std::ostringstream address;  // as libtorch 1.13 prints it (c10::guts::to_string)
    address << static_cast<const void*>(p.unsafeGetTensorImpl());
    return address.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

// Where `pieces` hold `pieces.params()[...]`: [begin, end) of each parameter.
struct PieceRun {
  std::size_t begin, end;
};
std::vector<PieceRun> runs_of(const StepPieces& pieces) {
  std::vector<PieceRun> runs;
  const auto& all = pieces.pieces();
  for (std::size_t k = 0; k < all.size(); ++k)
    if (runs.empty() || all[runs.back().begin].param != all[k].param)
      runs.push_back({k, k + 1});
    else
      runs.back().end = k + 1;
  return runs;
}

const ElementwiseOptimizer& elementwise_of(const OptimizerFactory& factory) {
  const auto* elementwise = dynamic_cast<const ElementwiseOptimizer*>(&factory);
  if (!elementwise) throw std::logic_error("parameters were cut into pieces for an optimizer that is not elementwise");
  return *elementwise;
}

// One state tensor of a cut parameter of `shape` from its pieces' (flat, in
// order): their storage seen whole when they lie there one after the other
// (as whole_state leaves them), else their concatenation (`copied` set).
torch::Tensor joined(const std::vector<torch::Tensor*>& parts, const std::vector<StepPiece>& pieces,
                     c10::IntArrayRef shape, bool& copied) {
  const torch::Tensor& first = *parts.front();
  bool in_place = true;
  for (std::size_t j = 0; j < parts.size() && in_place; ++j)
    in_place = parts[j]->dim() == 1 && parts[j]->is_contiguous() && lies_over(*parts[j], first, pieces[j].offset);
  if (in_place) return shaped_over(first, 0, shape);
  copied = true;
  std::vector<torch::Tensor> flat;
  for (const auto* part : parts) flat.push_back(*part);
  return torch::cat(flat).view(shape);
}

// A per-element state tensor must be one value per element of its tensor.
void check_elementwise(const torch::Tensor& state, std::int64_t elements) {
  if (state.numel() != elements)
    throw std::runtime_error("an elementwise optimizer's state tensor holds " + std::to_string(state.numel()) +
                             " values for a parameter (piece) of " + std::to_string(elements) + " elements");
}

// The states `optimizer` holds of the pieces [run.begin, run.end) (empty
// when it holds none yet).
std::vector<torch::optim::OptimizerParamState*> states_of(torch::optim::Optimizer& optimizer,
                                                          const StepPieces& pieces, const PieceRun& run) {
  auto& states = optimizer.state();
  std::vector<torch::optim::OptimizerParamState*> found;
  for (std::size_t k = run.begin; k < run.end; ++k) {
    auto it = states.find(state_key(states, pieces.pieces()[k].tensor));
    if (it != states.end()) found.push_back(it->second.get());
  }
  if (!found.empty() && found.size() != run.end - run.begin)
    throw std::logic_error("the optimizer holds states of some pieces of a parameter, not of all");
  return found;
}

// The state of a cut parameter from its pieces' `states` (of the pieces
// `run`): the first piece's with each per-element tensor the pieces'
// joined, and the pieces' tensors then lie over the joined one, one field
// at a time (so that a copy holds one field twice at most).
std::unique_ptr<torch::optim::OptimizerParamState> whole_state(
    const ElementwiseOptimizer& elementwise, const std::vector<torch::optim::OptimizerParamState*>& states,
    const StepPieces& pieces, const PieceRun& run, bool& copied) {
  const auto& all = pieces.pieces();
  const torch::Tensor& p = pieces.params()[all[run.begin].param];
  auto state = states.front()->clone();
  const auto fields = elementwise.state_tensors(*state);
  const std::vector<StepPiece> cut(all.begin() + static_cast<std::ptrdiff_t>(run.begin),
                                   all.begin() + static_cast<std::ptrdiff_t>(run.end));
  for (std::size_t f = 0; f < fields.size(); ++f) {
    std::vector<torch::Tensor*> parts;
    for (auto* piece_state : states) parts.push_back(elementwise.state_tensors(*piece_state)[f]);
    if (!parts.front()->defined()) continue;  // Adam's max_exp_avg_sq without amsgrad
    for (std::size_t j = 0; j < parts.size(); ++j) check_elementwise(*parts[j], cut[j].length);
    *fields[f] = joined(parts, cut, p.sizes(), copied);
    for (std::size_t j = 0; j < parts.size(); ++j) *parts[j] = flat_over(*fields[f], cut[j].offset, cut[j].length);
  }
  return state;
}

// The states `from` holds of `pieces`, as `to`'s states of their parameters
// (which `to` holds): a whole parameter's shared (a shallow copy, the same
// tensors); a cut one's its whole_state.
void join_states(const OptimizerFactory& factory, torch::optim::Optimizer& from, torch::optim::Optimizer& to,
                 const StepPieces& pieces) {
  auto& target = to.state();
  const auto& all = pieces.pieces();
  for (const auto& run : runs_of(pieces)) {
    const torch::Tensor& p = pieces.params()[all[run.begin].param];
    const auto states = states_of(from, pieces, run);
    if (states.empty()) continue;  // not stepped yet
    bool copied = false;
    target[state_key(target, p)] = all[run.begin].whole
                                       ? states.front()->clone()
                                       : whole_state(elementwise_of(factory), states, pieces, run, copied);
  }
}

// The states `whole` holds of `pieces.params()` as `to`'s states of the
// pieces: a whole parameter's moved, a cut one's split into its pieces'
// (each over the whole tensor's storage).
void split_states(const OptimizerFactory& factory, torch::optim::Optimizer& whole, torch::optim::Optimizer& to,
                  const StepPieces& pieces) {
  auto& source = whole.state();
  auto& target = to.state();
  for (const auto& piece : pieces.pieces()) {
    const torch::Tensor& p = pieces.params()[piece.param];
    auto it = source.find(state_key(source, p));
    if (it == source.end()) continue;
    if (piece.whole) {
      target[state_key(target, piece.tensor)] = std::move(it->second);
      continue;
    }
    auto state = it->second->clone();
    for (auto* field : elementwise_of(factory).state_tensors(*state)) {
      if (!field->defined()) continue;
      check_elementwise(*field, p.numel());
      if (!field->is_contiguous()) *field = field->contiguous();
      *field = flat_over(*field, piece.offset, piece.length);
    }
    target[state_key(target, piece.tensor)] = std::move(state);
  }
}

// Each parameter group's options of `from` into `to`'s group of the same
// place (the learning rate a scheduler changed, say); nothing when the
// factory made another number of groups.
void copy_group_options(const torch::optim::Optimizer& from, torch::optim::Optimizer& to) {
  const auto& source = from.param_groups();
  auto& target = to.param_groups();
  if (source.size() != target.size()) return;
  for (std::size_t g = 0; g < source.size(); ++g) target[g].set_options(source[g].options().clone());
}

}  // namespace

std::vector<int> parameter_owners(Parallel& parallel, const std::vector<torch::Tensor>& params, int world_size) {
  auto* sharded = dynamic_cast<ShardedOptimizer*>(&parallel);
  if (!sharded) return {};
  std::vector<int> owners = sharded->parameter_owners(params);
  if (owners.size() != params.size())
    throw std::runtime_error("the parallel wrapper named owners of " + std::to_string(owners.size()) +
                             " parameters; the model has " + std::to_string(params.size()));
  for (int r : owners)
    if (r < 0 || r >= world_size)
      throw std::runtime_error("the parallel wrapper named rank " + std::to_string(r) + " the owner of a parameter (" +
                               std::to_string(world_size) + " ranks)");
  return owners;
}

std::vector<torch::Tensor> owned_parameters(const std::vector<torch::Tensor>& params, const std::vector<int>& owners,
                                            int rank) {
  if (owners.empty()) return params;
  std::vector<torch::Tensor> mine;
  for (std::size_t i = 0; i < params.size(); ++i)
    if (owners[i] == rank) mine.push_back(params[i]);
  return mine;
}

std::unique_ptr<torch::optim::Optimizer> consolidated_optimizer(
    OptimizerFactory& factory, const RunningShard& running, const std::vector<torch::Tensor>& params,
    const std::vector<int>& owners, const ShardSource& shards) {
  auto whole = factory.create(params);
  copy_group_options(running.optimizer, *whole);
  for (int r = 0; r < shards.world_size; ++r) {
    if (r == shards.rank) {
      join_states(factory, running.optimizer, *whole, running.pieces);
      continue;
    }
    // Rank r's shard (joined_shard) again, over the same tensors, to read its bytes.
    const StepPieces theirs(owned_parameters(params, owners, r), 0);
    auto other = factory.create(theirs.tensors());
    {
      torch::serialize::InputArchive archive;
      shards.load(r, archive, params.empty() ? torch::Device(torch::kCPU) : params.front().device());
      other->load(archive);
    }
    join_states(factory, *other, *whole, theirs);
  }
  return whole;
}

std::unique_ptr<torch::optim::Optimizer> joined_shard(OptimizerFactory& factory, const RunningShard& running) {
  auto mine = factory.create(running.pieces.params());
  copy_group_options(running.optimizer, *mine);
  join_states(factory, running.optimizer, *mine, running.pieces);
  return mine;
}

bool lay_piece_states_whole(const OptimizerFactory& factory, const RunningShard& running) {
  if (!running.pieces.cuts_any()) return false;
  bool copied = false;
  for (const auto& run : runs_of(running.pieces)) {
    if (running.pieces.pieces()[run.begin].whole) continue;
    const auto states = states_of(running.optimizer, running.pieces, run);
    if (!states.empty()) whole_state(elementwise_of(factory), states, running.pieces, run, copied);
  }
  return copied;
}

std::optional<std::size_t> elementwise_state_bytes(const OptimizerFactory& factory,
                                                   torch::optim::Optimizer& optimizer) {
  const auto* elementwise = dynamic_cast<const ElementwiseOptimizer*>(&factory);
  if (!elementwise) return std::nullopt;
  std::unordered_set<const void*> counted;
  std::size_t bytes = 0;
  for (auto& entry : optimizer.state())
    for (const auto* field : elementwise->state_tensors(*entry.second))
      if (field->defined() && counted.insert(field->storage().unsafeGetStorageImpl()).second)
        bytes += field->storage().nbytes();
  return bytes;
}

void load_optimizer_shard(OptimizerFactory& factory, const RunningShard& own, const std::vector<torch::Tensor>& params,
                          torch::serialize::InputArchive& archive) {
  auto whole = factory.create(params);
  whole->load(archive);
  own.optimizer.state().clear();
  split_states(factory, *whole, own.optimizer, own.pieces);
}

}  // namespace skein::core
