#include <boost/test/unit_test.hpp>

#include <set>
#include <sstream>

#include <torch/torch.h>

#include "skein/training/optimizer_shards.hpp"

// A sharded optimizer's checkpoint: shards consolidated into the whole
// optimizer an unsharded run saves, and split again. Optimizers are
// compared by what they do: a state that went missing changes the next step.
namespace {

struct SgdFactory : skein::OptimizerFactory {
  std::unique_ptr<torch::optim::Optimizer> create(std::vector<torch::Tensor> params) override {
    return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(0.1).momentum(0.9));
  }
};

// Parameters of three sizes, the same values each time.
std::vector<torch::Tensor> parameters() {
  return {torch::arange(6.0).reshape({2, 3}).requires_grad_(), torch::ones({4}).requires_grad_(),
          torch::full({3}, 2.0).requires_grad_()};
}

// `steps` steps of `opt`, whose parameters are among `all`, with gradients
// fixed by each parameter's place in `all` and the step.
void step(torch::optim::Optimizer& opt, const std::vector<torch::Tensor>& all, int steps, int first = 0) {
  for (int s = first; s < first + steps; ++s) {
    for (auto& group : opt.param_groups())
      for (auto& p : group.params()) {
        std::size_t i = 0;
        while (!all[i].is_same(p)) ++i;
        p.mutable_grad() = torch::full(p.sizes(), 0.5 * static_cast<double>(i + 1) + s);
      }
    opt.step();
  }
}

std::string bytes_of(const torch::optim::Optimizer& opt) {
  std::ostringstream out;
  torch::serialize::OutputArchive archive;
  opt.save(archive);
  archive.save_to(out);
  return out.str();
}

void load(torch::optim::Optimizer& opt, const std::string& bytes) {
  std::istringstream in(bytes);
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  opt.load(archive);
}

bool same(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!torch::equal(a[i], b[i])) return false;
  return a.size() == b.size();
}

const std::vector<int> kOwners{0, 1, 0};  // rank 0: the matrix and the last vector

}  // namespace

BOOST_AUTO_TEST_SUITE(optimizer_shards)

BOOST_AUTO_TEST_CASE(owned_parameters_are_the_ranks_own_in_order) {
  const auto params = parameters();
  const auto mine = skein::core::owned_parameters(params, kOwners, 0);
  BOOST_REQUIRE(mine.size() == 2u);
  BOOST_TEST(mine[0].is_same(params[0]));
  BOOST_TEST(mine[1].is_same(params[2]));
  BOOST_TEST(skein::core::owned_parameters(params, {}, 1).size() == 3u);  // not sharded: all
}

// Two ranks' shards, each stepped twice, consolidated: the whole optimizer
// continues as one that stepped every parameter itself.
BOOST_AUTO_TEST_CASE(consolidated_shards_continue_as_the_whole_optimizer) {
  SgdFactory factory;
  const auto unsharded = parameters();
  auto whole = factory.create(unsharded);
  step(*whole, unsharded, 2);
  const auto sharded = parameters();
  std::vector<std::string> shards;
  std::unique_ptr<torch::optim::Optimizer> rank0;
  for (int r = 0; r < 2; ++r) {
    auto shard = factory.create(skein::core::owned_parameters(sharded, kOwners, r));
    step(*shard, sharded, 2);
    shards.push_back(bytes_of(*shard));
    if (r == 0) rank0 = std::move(shard);
  }
  BOOST_TEST(same(sharded, unsharded));
  skein::core::ShardSource source;
  source.world_size = 2;
  int asked = 0;
  source.bytes = [&](int r) {
    ++asked;
    BOOST_TEST(r == 1);  // never rank 0's own: that one is the running optimizer
    const auto& bytes = shards[static_cast<std::size_t>(r)];
    return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
  };
  const auto consolidated = skein::core::consolidated_optimizer(factory, *rank0, sharded, kOwners, source);
  BOOST_TEST(asked == 1);
  // Rank 0's states are its running optimizer's tensors, not copies.
  std::set<const void*> shared;
  for (const auto& [key, state] : consolidated->state())
    shared.insert(static_cast<const torch::optim::SGDParamState&>(*state).momentum_buffer().data_ptr());
  for (const auto& [key, state] : rank0->state())
    BOOST_TEST(shared.count(static_cast<const torch::optim::SGDParamState&>(*state).momentum_buffer().data_ptr()) == 1u);
  const std::string bytes = bytes_of(*consolidated);

  // Loaded over fresh parameters as an unsharded run would: the next step as whole's.
  auto resumed_params = parameters();
  for (std::size_t i = 0; i < resumed_params.size(); ++i) resumed_params[i].data().copy_(sharded[i]);
  auto resumed = factory.create(resumed_params);
  load(*resumed, bytes);
  step(*whole, unsharded, 1, 2);
  step(*resumed, resumed_params, 1, 2);
  BOOST_TEST(same(resumed_params, unsharded));

  // Without rank 1's shard its parameter starts its momentum afresh: the check tells.
  auto partial_params = parameters();
  for (std::size_t i = 0; i < partial_params.size(); ++i) partial_params[i].data().copy_(sharded[i]);
  auto empty = factory.create(skein::core::owned_parameters(sharded, kOwners, 1));
  source.bytes = [&](int) {
    const std::string bytes = bytes_of(*empty);
    return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
  };
  const std::string lacking = bytes_of(*skein::core::consolidated_optimizer(factory, *rank0, sharded, kOwners, source));
  auto partial = factory.create(partial_params);
  load(*partial, lacking);
  step(*partial, partial_params, 1, 2);
  BOOST_TEST(torch::equal(partial_params[0], unsharded[0]));
  BOOST_TEST(!torch::equal(partial_params[1], unsharded[1]));
}

// A whole optimizer split again: each rank keeps its own parameters' states.
BOOST_AUTO_TEST_CASE(a_whole_optimizer_loads_into_a_shard) {
  SgdFactory factory;
  const auto unsharded = parameters();
  auto whole = factory.create(unsharded);
  step(*whole, unsharded, 2);
  const std::string bytes = bytes_of(*whole);

  auto params = parameters();
  for (std::size_t i = 0; i < params.size(); ++i) params[i].data().copy_(unsharded[i]);
  auto shard = factory.create(skein::core::owned_parameters(params, kOwners, 1));
  std::istringstream in(bytes);
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  skein::core::load_optimizer_shard(factory, *shard, params, archive);
  BOOST_TEST(shard->state().size() == 1u);
  step(*whole, unsharded, 1, 2);
  step(*shard, params, 1, 2);
  BOOST_TEST(torch::equal(params[1], unsharded[1]));
}

BOOST_AUTO_TEST_SUITE_END()
