#include "skein/training/optimizer_shards.hpp"

#include <sstream>
#include <stdexcept>
#include <type_traits>

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

// Moves the state of each of `params` that `from` holds into `to`, which
// must hold those tensors too (the same TensorImpls).
void move_states(torch::optim::Optimizer& from, torch::optim::Optimizer& to,
                 const std::vector<torch::Tensor>& params) {
  auto& source = from.state();
  auto& target = to.state();
  for (const auto& p : params) {
    auto it = source.find(state_key(source, p));
    if (it != source.end()) target[state_key(target, p)] = std::move(it->second);
  }
}

// The states `from` holds of `params` into `to` as well: shallow copies,
// whose tensors are `from`'s own.
void share_states(const torch::optim::Optimizer& from, torch::optim::Optimizer& to,
                  const std::vector<torch::Tensor>& params) {
  const auto& source = from.state();
  auto& target = to.state();
  for (const auto& p : params) {
    auto it = source.find(state_key(source, p));
    if (it != source.end()) target[state_key(target, p)] = it->second->clone();
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
    OptimizerFactory& factory, const torch::optim::Optimizer& running, const std::vector<torch::Tensor>& params,
    const std::vector<int>& owners, const ShardSource& shards) {
  auto whole = factory.create(params);
  copy_group_options(running, *whole);
  for (int r = 0; r < shards.world_size; ++r) {
    const auto theirs = owned_parameters(params, owners, r);
    if (r == shards.rank) {
      share_states(running, *whole, theirs);
      continue;
    }
    // Rank r's optimizer again, over the same tensors, to read its bytes.
    auto other = factory.create(theirs);
    {
      const std::vector<std::uint8_t> bytes = shards.bytes(r);
      torch::serialize::InputArchive archive;  // reads `bytes` where they are, no copy
      archive.load_from(reinterpret_cast<const char*>(bytes.data()), bytes.size(),
                        params.empty() ? torch::Device(torch::kCPU) : params.front().device());
      other->load(archive);
    }
    move_states(*other, *whole, theirs);
  }
  return whole;
}

void load_optimizer_shard(OptimizerFactory& factory, torch::optim::Optimizer& own,
                          const std::vector<torch::Tensor>& params, torch::serialize::InputArchive& archive) {
  auto whole = factory.create(params);
  whole->load(archive);
  own.state().clear();
  std::vector<torch::Tensor> mine;
  for (const auto& group : own.param_groups())
    for (const auto& p : group.params()) mine.push_back(p);
  move_states(*whole, own, mine);
}

}  // namespace skein::core
