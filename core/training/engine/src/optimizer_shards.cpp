#include "skein/training/engine/optimizer_shards.hpp"

#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <unordered_set>

#include <torch/serialize.h>

#include "skein/torch_compat/optimizer_archive.hpp"

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

// Where `pieces` hold each of `pieces.units()`: [begin, end).
struct PieceRun {
  std::size_t begin, end;
};
std::vector<PieceRun> runs_of(const StepPieces& pieces) {
  std::vector<PieceRun> runs;
  const auto& all = pieces.pieces();
  for (std::size_t k = 0; k < all.size(); ++k)
    if (runs.empty() || all[runs.back().begin].unit != all[k].unit)
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

// One state tensor of a cut unit of `shape` from its pieces' (flat, in
// order, from element `at[j]` of the unit): their storage seen whole when
// they lie there one after the other (as whole_state leaves them), else
// their concatenation (`copied` set).
torch::Tensor joined(const std::vector<torch::Tensor*>& parts, const std::vector<std::int64_t>& at,
                     c10::IntArrayRef shape, bool& copied) {
  const torch::Tensor& first = *parts.front();
  bool in_place = true;
  for (std::size_t j = 0; j < parts.size() && in_place; ++j)
    in_place = parts[j]->dim() == 1 && parts[j]->is_contiguous() && lies_over(*parts[j], first, at[j]);
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

// The state of a cut unit from its pieces' `states` (of the pieces `run`):
// the first piece's with each per-element tensor the pieces' joined, and
// the pieces' tensors then lie over the joined one, one field at a time (so
// that a copy holds one field twice at most).
std::unique_ptr<torch::optim::OptimizerParamState> whole_state(
    const ElementwiseOptimizer& elementwise, const std::vector<torch::optim::OptimizerParamState*>& states,
    const StepPieces& pieces, const PieceRun& run, bool& copied) {
  const auto& all = pieces.pieces();
  const StepUnit& unit = pieces.units()[all[run.begin].unit];
  auto state = states.front()->clone();
  const auto fields = elementwise.state_tensors(*state);
  std::vector<std::int64_t> at, length;  // each piece's place in the unit
  for (std::size_t k = run.begin; k < run.end; ++k) {
    at.push_back(all[k].offset - unit.offset);
    length.push_back(all[k].length);
  }
  for (std::size_t f = 0; f < fields.size(); ++f) {
    std::vector<torch::Tensor*> parts;
    for (auto* piece_state : states) parts.push_back(elementwise.state_tensors(*piece_state)[f]);
    if (!parts.front()->defined()) continue;  // Adam's max_exp_avg_sq without amsgrad
    for (std::size_t j = 0; j < parts.size(); ++j) check_elementwise(*parts[j], length[j]);
    *fields[f] = joined(parts, at, unit.tensor.sizes(), copied);
    for (std::size_t j = 0; j < parts.size(); ++j) *parts[j] = flat_over(*fields[f], at[j], length[j]);
  }
  return state;
}

// The states `from` holds of `pieces`, as `to`'s states of their units
// (which `to` holds): a whole parameter's shared (a shallow copy, the same
// tensors); a cut one's its whole_state.
void join_states(const OptimizerFactory& factory, torch::optim::Optimizer& from, torch::optim::Optimizer& to,
                 const StepPieces& pieces) {
  auto& target = to.state();
  const auto& all = pieces.pieces();
  for (const auto& run : runs_of(pieces)) {
    const torch::Tensor& unit = pieces.units()[all[run.begin].unit].tensor;
    const auto states = states_of(from, pieces, run);
    if (states.empty()) continue;  // not stepped yet
    bool copied = false;
    target[state_key(target, unit)] = all[run.begin].whole
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
    // A span's pieces copy their part: over the loaded tensor they would
    // keep the other owners' parts alive too.
    const bool span = !pieces.units()[piece.unit].whole;
    auto state = it->second->clone();
    for (auto* field : elementwise_of(factory).state_tensors(*state)) {
      if (!field->defined()) continue;
      check_elementwise(*field, p.numel());
      if (!field->is_contiguous()) *field = field->contiguous();
      *field = flat_over(*field, piece.offset, piece.length);
      if (span) *field = field->clone();
    }
    target[state_key(target, piece.tensor)] = std::move(state);
  }
}

// The states `units` (an optimizer over pieces.unit_tensors()) holds, as
// `whole`'s states of the parameters: a whole unit's moved (the same
// tensors); a span's copied into its parameter's state at its offset (made
// by the first of its spans, of the parameter's shape).
void place_units(const OptimizerFactory& factory, torch::optim::Optimizer& units, const StepPieces& pieces,
                 torch::optim::Optimizer& whole) {
  auto& source = units.state();
  auto& target = whole.state();
  for (const auto& unit : pieces.units()) {
    auto it = source.find(state_key(source, unit.tensor));
    if (it == source.end()) continue;  // not stepped yet
    const torch::Tensor& p = pieces.params()[unit.param];
    auto& placed = target[state_key(target, p)];
    if (unit.whole) {
      placed = std::move(it->second);
      continue;
    }
    const auto& elementwise = elementwise_of(factory);
    if (!placed) {
      placed = it->second->clone();
      for (auto* field : elementwise.state_tensors(*placed))
        if (field->defined()) *field = torch::zeros(p.sizes(), field->options());
    }
    const auto from = elementwise.state_tensors(*it->second);
    const auto into = elementwise.state_tensors(*placed);
    for (std::size_t f = 0; f < from.size(); ++f) {
      if (!from[f]->defined() || !into[f]->defined()) continue;
      check_elementwise(*from[f], unit.length);
      flat_over(*into[f], unit.offset, unit.length).copy_(from[f]->reshape({-1}));
    }
  }
}

// Whether `spans` cover each of `params` once, in order, each owned by a
// rank in [0, world_size), cut only where `cut` allows it; throws naming
// the first that does not.
void check_spans(const std::vector<ParameterSpan>& spans, const std::vector<torch::Tensor>& params, int world_size,
                 bool cut) {
  std::size_t i = 0;
  std::int64_t at = 0;
  for (std::size_t k = 0; k < spans.size(); ++k) {
    const auto& span = spans[k];
    const std::int64_t n = i < params.size() ? params[i].numel() : 0;
    if (i >= params.size() || span.param != i || span.offset != at || span.length < 0 ||
        (span.length == 0 && n != 0) || at + span.length > n)
      throw std::runtime_error("the parallel wrapper's span " + std::to_string(k) + " (parameter " +
                               std::to_string(span.param) + ", elements " + std::to_string(span.offset) + " to " +
                               std::to_string(span.offset + span.length) +
                               ") does not continue its spans: they must cover each of the model's " +
                               std::to_string(params.size()) + " parameters once, in order");
    if (span.owner < 0 || span.owner >= world_size)
      throw std::runtime_error("the parallel wrapper named rank " + std::to_string(span.owner) +
                               " the owner of a parameter (" + std::to_string(world_size) + " ranks)");
    at += span.length;
    if (at == n) {
      ++i;
      at = 0;
    } else if (!cut || !params[i].is_contiguous()) {
      throw std::runtime_error("the parallel wrapper cut parameter " + std::to_string(i) + " into spans, but " +
                               (cut ? "it is not contiguous" : "the optimizer is not elementwise (skein::ElementwiseOptimizer)"));
    }
  }
  if (i != params.size())
    throw std::runtime_error("the parallel wrapper's spans end at parameter " + std::to_string(i) + " of " +
                             std::to_string(params.size()));
}

}  // namespace

void copy_group_options(const torch::optim::Optimizer& from, torch::optim::Optimizer& to) {
  const auto& source = from.param_groups();
  auto& target = to.param_groups();
  if (source.size() != target.size()) return;
  for (std::size_t g = 0; g < source.size(); ++g) target[g].set_options(source[g].options().clone());
}

std::vector<ParameterSpan> shard_spans(Parallel& parallel, const std::vector<torch::Tensor>& params, int world_size,
                                       bool cut) {
  std::vector<ParameterSpan> spans;
  if (auto* in_spans = dynamic_cast<ShardedInSpans*>(&parallel)) {
    spans = in_spans->parameter_spans(params, cut);
  } else if (auto* sharded = dynamic_cast<ShardedOptimizer*>(&parallel)) {
    const std::vector<int> owners = sharded->parameter_owners(params);
    if (owners.size() != params.size())
      throw std::runtime_error("the parallel wrapper named owners of " + std::to_string(owners.size()) +
                               " parameters; the model has " + std::to_string(params.size()));
    spans = whole_spans(params, owners);
  } else {
    return {};
  }
  check_spans(spans, params, world_size, cut);
  return spans;
}

std::vector<ParameterSpan> whole_spans(const std::vector<torch::Tensor>& params, const std::vector<int>& owners) {
  std::vector<ParameterSpan> spans;
  for (std::size_t i = 0; i < params.size() && i < owners.size(); ++i)
    spans.push_back({i, 0, params[i].numel(), owners[i]});
  return spans;
}

std::vector<ParameterSpan> owned_spans(const std::vector<ParameterSpan>& spans, int rank) {
  std::vector<ParameterSpan> mine;
  for (const auto& span : spans)
    if (span.owner == rank) mine.push_back(span);
  return mine;
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
    const std::vector<ParameterSpan>& spans, const ShardSource& shards) {
  auto whole = factory.create(params);
  copy_group_options(running.optimizer, *whole);
  for (int r = 0; r < shards.world_size; ++r) {
    if (r == shards.rank) {
      auto mine = joined_shard(factory, running);
      place_units(factory, *mine, running.pieces, *whole);
      continue;
    }
    // Rank r's shard (joined_shard) again, over tensors of the same units, to read its bytes.
    const StepPieces theirs(params, owned_spans(spans, r), 0);
    auto other = factory.create(theirs.unit_tensors());
    {
      torch::serialize::InputArchive archive;
      shards.load(r, archive, params.empty() ? torch::Device(torch::kCPU) : params.front().device());
      torch_compat::load_optimizer(*other, archive);
    }
    place_units(factory, *other, theirs, *whole);
  }
  return whole;
}

std::unique_ptr<torch::optim::Optimizer> joined_shard(OptimizerFactory& factory, const RunningShard& running) {
  auto mine = factory.create(running.pieces.unit_tensors());
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

std::unique_ptr<torch::optim::Optimizer> copied_optimizer(OptimizerFactory& factory,
                                                          const torch::optim::Optimizer& optimizer,
                                                          const std::vector<torch::Tensor>& params,
                                                          const std::vector<torch::Tensor>& copies) {
  const auto* elementwise = dynamic_cast<const ElementwiseOptimizer*>(&factory);
  if (!elementwise) return nullptr;
  auto copy = factory.create(copies);
  copy_group_options(optimizer, *copy);
  auto& from = optimizer.state();
  auto& to = copy->state();
  for (std::size_t i = 0; i < params.size() && i < copies.size(); ++i) {
    auto it = from.find(state_key(from, params[i]));
    if (it == from.end()) continue;  // not stepped yet
    auto state = it->second->clone();
    for (auto* field : elementwise->state_tensors(*state))
      if (field->defined()) *field = field->detach().to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true);
    to[state_key(to, copies[i])] = std::move(state);
  }
  return copy;
}

void load_optimizer_shard(OptimizerFactory& factory, const RunningShard& own, const std::vector<torch::Tensor>& params,
                          torch::serialize::InputArchive& archive, const RunningShard* mirror) {
  auto whole = factory.create(params);
  torch_compat::load_optimizer(*whole, archive);
  // Two owners' shards hold no state in common: each takes its own from `whole`.
  for (const RunningShard* shard : {&own, mirror}) {
    if (!shard) continue;
    shard->optimizer.state().clear();
    split_states(factory, *whole, shard->optimizer, shard->pieces);
  }
}

}  // namespace skein::core
