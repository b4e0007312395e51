#include <boost/test/unit_test.hpp>

#include <set>
#include <sstream>

#include <torch/torch.h>

#include "skein/kit/optimizers.hpp"
#include "skein/training/engine/optimizer_shards.hpp"

// A sharded optimizer's checkpoint: shards consolidated into the whole
// optimizer an unsharded run saves, and split again. Optimizers are
// compared by what they do: a state that went missing changes the next step.
using engine_test::same;

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

// A ShardSource::load reading rank r's shard from `bytes_of_rank(r)`.
template <class Bytes>
auto loading(Bytes bytes_of_rank) {
  return [bytes_of_rank](int r, torch::serialize::InputArchive& archive, const torch::Device& device) {
    const std::string bytes = bytes_of_rank(r);
    archive.load_from(bytes.data(), bytes.size(), device);
  };
}

const std::vector<int> kOwners{0, 1, 0};  // rank 0: the matrix and the last vector

// parameters() holding `values`' values.
std::vector<torch::Tensor> parameters_like(const std::vector<torch::Tensor>& values) {
  auto params = parameters();
  for (std::size_t i = 0; i < params.size(); ++i) params[i].data().copy_(values[i]);
  return params;
}

// An unsharded optimizer over every parameter, stepped twice, and its saved bytes.
struct Stepped {
  std::vector<torch::Tensor> params;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::string bytes;
};
Stepped whole_after_two_steps(skein::OptimizerFactory& factory) {
  Stepped w{parameters(), nullptr, ""};
  w.optimizer = factory.create(w.params);
  step(*w.optimizer, w.params, 2);
  w.bytes = bytes_of(*w.optimizer);
  return w;
}

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
  source.load = loading([&](int r) {
    ++asked;
    BOOST_TEST(r == 1);  // never rank 0's own: that one is the running optimizer
    return shards[static_cast<std::size_t>(r)];
  });
  const skein::core::StepPieces whole_pieces(skein::core::owned_parameters(sharded, kOwners, 0), 0);
  const auto consolidated =
      skein::core::consolidated_optimizer(factory, {*rank0, whole_pieces}, sharded, skein::core::whole_spans(sharded, kOwners), source);
  BOOST_TEST(asked == 1);
  // Rank 0's states are its running optimizer's tensors, not copies.
  std::set<const void*> shared;
  for (const auto& [key, state] : consolidated->state())
    shared.insert(static_cast<const torch::optim::SGDParamState&>(*state).momentum_buffer().data_ptr());
  for (const auto& [key, state] : rank0->state())
    BOOST_TEST(shared.count(static_cast<const torch::optim::SGDParamState&>(*state).momentum_buffer().data_ptr()) == 1u);
  const std::string bytes = bytes_of(*consolidated);

  // Loaded over fresh parameters as an unsharded run would: the next step as whole's.
  auto resumed_params = parameters_like(sharded);
  auto resumed = factory.create(resumed_params);
  load(*resumed, bytes);
  step(*whole, unsharded, 1, 2);
  step(*resumed, resumed_params, 1, 2);
  BOOST_TEST(same(resumed_params, unsharded));

  // Without rank 1's shard its parameter starts its momentum afresh: the check tells.
  auto partial_params = parameters_like(sharded);
  auto empty = factory.create(skein::core::owned_parameters(sharded, kOwners, 1));
  source.load = loading([&](int) { return bytes_of(*empty); });
  const std::string lacking =
      bytes_of(*skein::core::consolidated_optimizer(factory, {*rank0, whole_pieces}, sharded, skein::core::whole_spans(sharded, kOwners), source));
  auto partial = factory.create(partial_params);
  load(*partial, lacking);
  step(*partial, partial_params, 1, 2);
  BOOST_TEST(torch::equal(partial_params[0], unsharded[0]));
  BOOST_TEST(!torch::equal(partial_params[1], unsharded[1]));
}

// A whole optimizer split again: each rank keeps its own parameters' states.
BOOST_AUTO_TEST_CASE(a_whole_optimizer_loads_into_a_shard) {
  SgdFactory factory;
  auto [unsharded, whole, bytes] = whole_after_two_steps(factory);
  auto params = parameters_like(unsharded);
  auto shard = factory.create(skein::core::owned_parameters(params, kOwners, 1));
  std::istringstream in(bytes);
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  const skein::core::StepPieces pieces(skein::core::owned_parameters(params, kOwners, 1), 0);
  skein::core::load_optimizer_shard(factory, {*shard, pieces}, params, archive);
  BOOST_TEST(shard->state().size() == 1u);
  step(*whole, unsharded, 1, 2);
  step(*shard, params, 1, 2);
  BOOST_TEST(torch::equal(params[1], unsharded[1]));
}

// Adam, elementwise: the kit's plugin class over libtorch's.
using AdamFactory = skein::LibtorchOptimizer<torch::optim::Adam, torch::optim::AdamOptions>;

// `steps` steps of an optimizer over `pieces`, with step()'s gradients.
void step_in_pieces(torch::optim::Optimizer& opt, const skein::core::StepPieces& pieces,
                    const std::vector<torch::Tensor>& all, int steps, int first = 0) {
  for (int s = first; s < first + steps; ++s) {
    for (const auto& p : pieces.params()) {
      std::size_t i = 0;
      while (!all[i].is_same(p)) ++i;
      p.mutable_grad() = torch::full(p.sizes(), 0.5 * static_cast<double>(i + 1) + s);
    }
    pieces.before_step();
    opt.step();
  }
}

// The first moment of the state of `elements` elements (one in these tests).
const torch::Tensor& exp_avg_of(const torch::optim::Optimizer& opt, std::int64_t elements) {
  for (const auto& entry : opt.state()) {
    const auto& adam = static_cast<const torch::optim::AdamParamState&>(*entry.second);
    if (adam.exp_avg().numel() == elements) return adam.exp_avg();
  }
  throw std::logic_error("no state of that size");
}

// The matrix cut in pieces of 4 elements (4 + 2) on rank 0: the pieces'
// states are joined into the matrix's, which continues as stepped whole.
BOOST_AUTO_TEST_CASE(pieces_states_are_joined_into_their_parameters) {
  AdamFactory factory(torch::optim::AdamOptions(0.1));
  const auto unsharded = parameters();
  auto whole = factory.create(unsharded);
  step(*whole, unsharded, 2);
  const auto sharded = parameters();
  std::vector<skein::core::StepPieces> pieces;
  std::vector<std::unique_ptr<torch::optim::Optimizer>> ranks;
  for (int r = 0; r < 2; ++r) {
    pieces.emplace_back(skein::core::owned_parameters(sharded, kOwners, r), 4);
    ranks.push_back(factory.create(pieces.back().tensors()));
    step_in_pieces(*ranks.back(), pieces.back(), sharded, 2);
  }
  BOOST_TEST(pieces[0].pieces().size() == 3u);
  BOOST_TEST(ranks[0]->state().size() == 3u);
  BOOST_TEST(same(sharded, unsharded));  // stepped in pieces as whole
  skein::core::ShardSource source;
  source.world_size = 2;
  source.load = loading([&](int r) {
    const auto k = static_cast<std::size_t>(r);  // rank r's shard as it sends it
    return bytes_of(*skein::core::joined_shard(factory, {*ranks[k], pieces[k]}));
  });
  const auto consolidated = skein::core::consolidated_optimizer(factory, {*ranks[0], pieces[0]}, sharded, skein::core::whole_spans(sharded, kOwners), source);
  const torch::Tensor& joined = exp_avg_of(*consolidated, sharded[0].numel());
  BOOST_TEST(joined.sizes() == sharded[0].sizes());
  // The running pieces' moments now lie over the joined one: the next join copies nothing.
  for (const auto& piece : pieces[0].pieces())
    if (!piece.whole) BOOST_TEST(skein::core::lies_over(exp_avg_of(*ranks[0], piece.length), joined, piece.offset));
  const auto again = skein::core::consolidated_optimizer(factory, {*ranks[0], pieces[0]}, sharded, skein::core::whole_spans(sharded, kOwners), source);
  BOOST_TEST(exp_avg_of(*again, sharded[0].numel()).data_ptr() == joined.data_ptr());

  auto resumed_params = parameters_like(sharded);
  auto resumed = factory.create(resumed_params);
  load(*resumed, bytes_of(*consolidated));
  step(*whole, unsharded, 1, 2);
  step(*resumed, resumed_params, 1, 2);
  BOOST_TEST(same(resumed_params, unsharded));
}

// After the first step the pieces' states are laid out whole, once, and
// stepping on through them is stepping the whole.
BOOST_AUTO_TEST_CASE(pieces_states_are_laid_out_whole_once) {
  AdamFactory factory(torch::optim::AdamOptions(0.1));
  const auto unsharded = parameters();
  auto whole = factory.create(unsharded);
  step(*whole, unsharded, 1);
  const auto sharded = parameters();
  const skein::core::StepPieces pieces(skein::core::owned_parameters(sharded, kOwners, 0), 4);
  auto shard = factory.create(pieces.tensors());
  BOOST_TEST(!skein::core::lay_piece_states_whole(factory, {*shard, pieces}));  // no states yet
  step_in_pieces(*shard, pieces, sharded, 1);
  const auto& first = pieces.pieces()[0];
  const auto& second = pieces.pieces()[1];
  BOOST_REQUIRE(!first.whole);
  BOOST_TEST(!skein::core::lies_over(exp_avg_of(*shard, second.length), exp_avg_of(*shard, first.length), 4));
  BOOST_TEST(skein::core::lay_piece_states_whole(factory, {*shard, pieces}));
  const torch::Tensor laid = exp_avg_of(*shard, first.length);
  BOOST_TEST(skein::core::lies_over(exp_avg_of(*shard, second.length), laid, second.offset));
  BOOST_TEST(!skein::core::lay_piece_states_whole(factory, {*shard, pieces}));  // laid already: nothing copied
  BOOST_TEST(exp_avg_of(*shard, first.length).data_ptr() == laid.data_ptr());
  step(*whole, unsharded, 2, 1);
  step_in_pieces(*shard, pieces, sharded, 2, 1);
  BOOST_TEST(torch::equal(sharded[0], unsharded[0]));
  BOOST_TEST(torch::equal(sharded[2], unsharded[2]));
}

// A whole optimizer split into a rank's pieces continues as the whole.
BOOST_AUTO_TEST_CASE(a_whole_optimizer_splits_into_a_ranks_pieces) {
  AdamFactory factory(torch::optim::AdamOptions(0.1));
  auto [unsharded, whole, bytes] = whole_after_two_steps(factory);
  auto params = parameters_like(unsharded);
  const skein::core::StepPieces pieces(skein::core::owned_parameters(params, kOwners, 0), 4);
  auto shard = factory.create(pieces.tensors());
  std::istringstream in(bytes);
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  skein::core::load_optimizer_shard(factory, {*shard, pieces}, params, archive);
  BOOST_TEST(shard->state().size() == 3u);  // the matrix's two pieces and the last vector
  step(*whole, unsharded, 1, 2);
  step_in_pieces(*shard, pieces, params, 1, 2);
  BOOST_TEST(torch::equal(params[0], unsharded[0]));
  BOOST_TEST(torch::equal(params[2], unsharded[2]));
}

// The matrix cut between the ranks (elements 0-3 to rank 0, 4-5 to rank 1),
// the vectors whole to ranks 1 and 0.
const std::vector<skein::ParameterSpan> kCut{{0, 0, 4, 0}, {0, 4, 2, 1}, {1, 0, 4, 1}, {2, 0, 3, 0}};

// Each rank steps its span of the matrix (in pieces of 2); consolidated, the
// matrix's state is whole and continues as the unsharded optimizer's; split
// again, each rank's spans continue likewise.
BOOST_AUTO_TEST_CASE(a_parameter_cut_between_ranks_is_consolidated_whole) {
  AdamFactory factory(torch::optim::AdamOptions(0.1));
  auto [unsharded, whole, bytes] = whole_after_two_steps(factory);
  const auto sharded = parameters();
  std::vector<skein::core::StepPieces> pieces;
  std::vector<std::unique_ptr<torch::optim::Optimizer>> ranks;
  for (int r = 0; r < 2; ++r) {
    pieces.emplace_back(sharded, skein::core::owned_spans(kCut, r), 2);
    ranks.push_back(factory.create(pieces.back().tensors()));
    step_in_pieces(*ranks.back(), pieces.back(), sharded, 2);
  }
  BOOST_TEST(pieces[0].units().size() == 2u);   // its span of the matrix, the last vector
  BOOST_TEST(pieces[0].pieces().size() == 4u);  // the span in two pieces, the vector in two
  BOOST_TEST(same(sharded, unsharded));
  skein::core::ShardSource source;
  source.world_size = 2;
  source.load = loading([&](int r) {
    const auto k = static_cast<std::size_t>(r);
    return bytes_of(*skein::core::joined_shard(factory, {*ranks[k], pieces[k]}));
  });
  const std::string consolidated =
      bytes_of(*skein::core::consolidated_optimizer(factory, {*ranks[0], pieces[0]}, sharded, kCut, source));

  auto resumed_params = parameters_like(sharded);
  auto resumed = factory.create(resumed_params);
  load(*resumed, consolidated);
  auto split_params = parameters_like(sharded);
  step(*whole, unsharded, 1, 2);
  step(*resumed, resumed_params, 1, 2);
  BOOST_TEST(same(resumed_params, unsharded));

  for (int r = 0; r < 2; ++r) {
    const skein::core::StepPieces mine(split_params, skein::core::owned_spans(kCut, r), 2);
    auto shard = factory.create(mine.tensors());
    std::istringstream in(consolidated);
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    skein::core::load_optimizer_shard(factory, {*shard, mine}, split_params, archive);
    step_in_pieces(*shard, mine, split_params, 1, 2);
  }
  BOOST_TEST(same(split_params, unsharded));
}

// A parallel wrapper answering the spans it holds.
struct SpansOf : skein::Parallel, skein::ShardedOptimizer, skein::ShardedInSpans {
  explicit SpansOf(std::vector<skein::ParameterSpan> s) : spans(std::move(s)) {}
  void prepare(torch::nn::Module&) override {}
  void finish_gradients() override {}
  void all_reduce_sum(std::vector<double>&) override {}
  void all_reduce_max(std::vector<double>&) override {}
  void barrier() override {}
  std::vector<int> parameter_owners(const std::vector<torch::Tensor>&) override { return {}; }
  void after_step() override {}
  std::vector<skein::ParameterSpan> parameter_spans(const std::vector<torch::Tensor>&, bool) override { return spans; }
  std::vector<skein::ParameterSpan> spans;
};

// What shard_spans says of `spans` ("" when it takes them).
std::string problem_of(const std::vector<skein::ParameterSpan>& spans, bool cut = true) {
  SpansOf parallel(spans);
  try {
    skein::core::shard_spans(parallel, parameters(), 2, cut);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

BOOST_AUTO_TEST_CASE(spans_must_cover_each_parameter_once_in_order) {
  BOOST_TEST(problem_of(kCut) == "");
  BOOST_TEST(problem_of(kCut, false).find("cut parameter 0 into spans, but the optimizer is not elementwise") !=
             std::string::npos);
  const std::string gap = problem_of({{0, 0, 4, 0}, {0, 5, 1, 1}, {1, 0, 4, 1}, {2, 0, 3, 0}});
  BOOST_TEST(gap.find("span 1 (parameter 0, elements 5 to 6) does not continue") != std::string::npos, gap);
  BOOST_TEST(problem_of({{0, 0, 6, 2}, {1, 0, 4, 1}, {2, 0, 3, 0}}).find("named rank 2") != std::string::npos);
  BOOST_TEST(problem_of({{0, 0, 6, 0}, {1, 0, 4, 1}}).find("end at parameter 2 of 3") != std::string::npos);
  BOOST_TEST(problem_of({{0, 0, 6, 0}, {1, 0, 4, 1}, {2, 0, 3, 0}, {2, 0, 3, 1}}).find("span 3") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
