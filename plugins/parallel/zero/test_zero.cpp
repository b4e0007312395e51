#define BOOST_TEST_MODULE parallel_zero
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include <torch/optim/adam.h>
#include <torch/serialize.h>

#include "partition.hpp"
#include "skein/testing.hpp"

// zero on two ranks of the real engine (threads of this test over loopback),
// against ddp on the same model, data and seed.
using skein::testing::EngineRun;
using skein::testing::EngineRunOptions;

namespace {

// Parameters after zero's steps may differ from ddp's by float rounding
// (stage 2 reduces to the owner where ddp all-reduces); the tolerance stated
// in the plugin's README.
constexpr double kRtol = 1e-5, kAtol = 1e-6;

EngineRunOptions run_of(const nlohmann::json& parallel, const nlohmann::json& optimizer, long epochs = 3) {
  EngineRunOptions o = skein::testing::small_run("parallel", parallel, 2);
  o.config["history"] = {{"plugin", "filestore"}};
  o.config["optimizer"] = optimizer;
  o.config["max_epochs"] = epochs;
  return o;
}

const nlohmann::json kSgd = {{"plugin", "sgd"}, {"lr", 0.1}, {"momentum", 0.9}};
const nlohmann::json kAdam = {{"plugin", "adam"}, {"lr", 0.01}};

// Every rank's parameters set to the same seeded values. EngineRun's ranks
// are threads that make their models at once from libtorch's one global
// generator, so rank 0's initial weights (which ddp and zero broadcast)
// differ from run to run; runs compared here start from these instead.
void same_start(EngineRun& run) {
  run.each_rank([](skein::testing::RankEngine& e) {
    torch::NoGradGuard no_grad;
    std::uint64_t seed = 1000;
    for (auto& p : e.context().model_base().parameters()) {
      auto generator = at::make_generator<at::CPUGeneratorImpl>(seed++);
      p.copy_(torch::randn(p.sizes(), generator, p.options()) * 0.5);
    }
  });
}

std::vector<torch::Tensor> weights(EngineRun& run, int rank) {
  std::vector<torch::Tensor> out;
  for (const auto& p : run.rank(rank).context().model_base().parameters()) out.push_back(p.detach().clone());
  return out;
}

// "" when every tensor of a is close to b's; else which is not, and by how much.
std::string differs(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, bool exact = false) {
  if (a.size() != b.size()) return "another number of parameters";
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool same = exact ? torch::equal(a[i], b[i]) : torch::allclose(a[i], b[i], kRtol, kAtol);
    if (!same)
      return "parameter " + std::to_string(i) + " differs by " +
             std::to_string((a[i] - b[i]).abs().max().item<double>());
  }
  return "";
}

std::vector<int> owners(EngineRun& run, int rank) {
  auto& ctx = run.rank(rank).context();
  return dynamic_cast<skein::ShardedOptimizer&>(ctx.parallel()).parameter_owners(ctx.model_base().parameters());
}

// libtorch keys an optimizer's states by the parameter's TensorImpl: as its
// address printed in 1.13, as the pointer in 2.x.
template <class Map>
typename Map::key_type state_key(const Map&, const torch::Tensor& p) {
  if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
    std::ostringstream address;
    address << static_cast<const void*>(p.unsafeGetTensorImpl());
    return address.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

// The Adam state of parameter p, or null.
const torch::optim::AdamParamState* adam_state(torch::optim::Optimizer& opt, const torch::Tensor& p) {
  auto& states = opt.state();
  auto it = states.find(state_key(states, p));
  return it == states.end() ? nullptr : static_cast<const torch::optim::AdamParamState*>(it->second.get());
}

// optimizer.pt of checkpoint `dir` loaded into an Adam over `params`.
std::unique_ptr<torch::optim::Adam> adam_of(const std::string& dir, const std::vector<torch::Tensor>& params) {
  auto opt = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(0.01));
  torch::serialize::InputArchive archive;
  archive.load_from(dir + "/optimizer.pt");
  opt->load(archive);
  return opt;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(parallel_zero)

// The mlp 4-8-3: weight1 32, bias1 8, weight2 24, bias2 3 elements, 67 in
// all. Laid end to end and halved at element 33, inside bias1 (32-40): one
// element from its start, within a tenth of a rank's share, so the boundary
// moves there and no parameter is cut: weight1 -> 0, the rest -> 1.
BOOST_AUTO_TEST_CASE(parameters_are_partitioned_flat_in_order) {
  EngineRun run(run_of({{"plugin", "zero"}}, kSgd));
  BOOST_TEST(owners(run, 0) == (std::vector<int>{0, 1, 1, 1}));
  BOOST_TEST(owners(run, 1) == (std::vector<int>{0, 1, 1, 1}));
}

// [owner, length] of each span, in order.
std::vector<std::pair<int, std::int64_t>> owned(const std::vector<skein::ParameterSpan>& spans) {
  std::vector<std::pair<int, std::int64_t>> out;
  for (const auto& s : spans) out.emplace_back(s.owner, s.length);
  return out;
}
using Owned = std::vector<std::pair<int, std::int64_t>>;

// The flat partition: W equal runs, a boundary moved to a parameter's nearer
// end within a tenth of a share, and always out of one that cannot be cut.
BOOST_AUTO_TEST_CASE(the_flat_partition_cuts_equal_runs) {
  using skein_zero::flat_spans;
  const std::vector<bool> all(3, true);
  // 100 elements in 10 + 80 + 10, W=2: the boundary at 50, 40 from the ends: cut.
  BOOST_TEST(owned(flat_spans({10, 80, 10}, all, 2)) == (Owned{{0, 10}, {0, 40}, {1, 40}, {1, 10}}));
  // W=4: boundaries at 25, 50, 75 all inside the large one.
  BOOST_TEST(owned(flat_spans({10, 80, 10}, all, 4)) ==
             (Owned{{0, 10}, {0, 15}, {1, 25}, {2, 25}, {3, 15}, {3, 10}}));
  // 48 + 4 + 48, W=2: the boundary at 50 is 2 from the small one's start (a
  // tenth of the share: 5): it moves there.
  BOOST_TEST(owned(flat_spans({48, 4, 48}, all, 2)) == (Owned{{0, 48}, {1, 4}, {1, 48}}));
  // A parameter that cannot be cut goes whole to the nearer side (a tie: the later rank).
  BOOST_TEST(owned(flat_spans({10, 80, 10}, {true, false, true}, 2)) == (Owned{{0, 10}, {1, 80}, {1, 10}}));
  BOOST_TEST(owned(flat_spans({10, 80, 20}, {true, false, true}, 2)) == (Owned{{0, 10}, {0, 80}, {1, 20}}));
  // More ranks than elements: some own nothing; an empty parameter is one span.
  BOOST_TEST(owned(flat_spans({1, 0, 1}, all, 4)) == (Owned{{1, 1}, {3, 0}, {3, 1}}));
}

BOOST_AUTO_TEST_CASE(parameters_after_training_equal_ddps) {
  for (const auto& optimizer : {kSgd, kAdam}) {
    EngineRun ddp(run_of({{"plugin", "ddp"}}, optimizer));
    same_start(ddp);
    BOOST_TEST(ddp.fit() == (std::vector<long>{3, 3}));
    const auto expected = weights(ddp, 0);
    for (int stage : {1, 2}) {
      const std::string what = optimizer["plugin"].get<std::string>() + ", stage " + std::to_string(stage);
      EngineRun zero(run_of({{"plugin", "zero"}, {"stage", stage}}, optimizer));
      same_start(zero);
      BOOST_TEST(zero.fit() == (std::vector<long>{3, 3}), what);
      BOOST_TEST(differs(weights(zero, 0), weights(zero, 1), true) == "", what);  // the ranks agree exactly
      BOOST_TEST(differs(weights(zero, 0), expected) == "", what << ": " << differs(weights(zero, 0), expected));
    }
  }
}

// Gradient accumulation: partial gradients stay local, each group's sum goes to the owner.
BOOST_AUTO_TEST_CASE(parameters_with_gradient_accumulation_equal_ddps) {
  auto with_accumulation = [](const nlohmann::json& parallel) {
    EngineRunOptions o = run_of(parallel, kAdam);
    o.config["accumulate_steps"] = 2;
    return o;
  };
  EngineRun ddp(with_accumulation({{"plugin", "ddp"}}));
  same_start(ddp);
  ddp.fit();
  for (int stage : {1, 2}) {
    EngineRun zero(with_accumulation({{"plugin", "zero"}, {"stage", stage}}));
    same_start(zero);
    zero.fit();
    BOOST_TEST(differs(weights(zero, 0), weights(ddp, 0)) == "", "stage " << stage);
  }
}

// The test above can fail: a model that trained differently is told apart.
BOOST_AUTO_TEST_CASE(the_comparison_tells_another_training_apart) {
  EngineRun ddp(run_of({{"plugin", "ddp"}}, kAdam));
  same_start(ddp);
  ddp.fit();
  EngineRun zero(run_of({{"plugin", "zero"}}, kAdam, 2));
  same_start(zero);
  zero.fit();
  BOOST_TEST(differs(weights(zero, 0), weights(ddp, 0)) != "");
}

BOOST_AUTO_TEST_CASE(each_rank_keeps_state_for_its_own_parameters_only) {
  for (int stage : {1, 2}) {
    EngineRun run(run_of({{"plugin", "zero"}, {"stage", stage}}, kAdam));
    run.fit();
    const auto who = owners(run, 0);
    for (int r = 0; r < 2; ++r) {
      auto& ctx = run.rank(r).context();
      const auto params = ctx.model_base().parameters();
      std::size_t mine = 0, stepped = 0;
      for (const auto& group : ctx.optimizer().param_groups()) mine += group.params().size();
      for (std::size_t i = 0; i < params.size(); ++i) {
        const bool has = adam_state(ctx.optimizer(), params[i]) != nullptr;
        BOOST_TEST(has == (who[i] == r), "stage " << stage << " rank " << r << " parameter " << i);
        stepped += has;
        // Gradients of other ranks' parameters are dropped after each step.
        if (who[i] != r) BOOST_TEST(!params[i].grad().defined());
      }
      BOOST_TEST(mine == stepped);
      BOOST_TEST(mine == static_cast<std::size_t>(std::count(who.begin(), who.end(), r)));
    }
  }
}

// Gradients live in the buckets: rank 1's own parameters (weight2, bias1,
// adjacent in bucket order) share one bucket in both stages, so their
// gradients are slots of one buffer, not copies.
BOOST_AUTO_TEST_CASE(own_gradients_are_slots_of_one_bucket) {
  for (int stage : {1, 2}) {
    EngineRun run(run_of({{"plugin", "zero"}, {"stage", stage}}, kSgd, 1));
    run.fit();
    const auto params = run.rank(1).context().model_base().parameters();
    BOOST_REQUIRE(params[1].grad().defined());
    BOOST_REQUIRE(params[2].grad().defined());
    BOOST_TEST(params[1].grad().is_alias_of(params[2].grad()), "stage " << stage);
  }
}

// The checkpoint's optimizer.pt is the whole optimizer, as ddp writes it.
BOOST_AUTO_TEST_CASE(checkpoints_hold_the_whole_optimizer) {
  skein::testing::TempDir dir;
  EngineRun ddp(run_of({{"plugin", "ddp"}}, kAdam, 2));
  same_start(ddp);
  ddp.fit();
  ddp.each_rank([&](skein::testing::RankEngine& e) { e.save_checkpoint(dir.str("ddp")); });
  EngineRun zero(run_of({{"plugin", "zero"}, {"stage", 2}}, kAdam, 2));
  same_start(zero);
  zero.fit();
  zero.each_rank([&](skein::testing::RankEngine& e) { e.save_checkpoint(dir.str("zero")); });
  const auto params = zero.rank(0).context().model_base().parameters();
  auto from_ddp = adam_of(dir.str("ddp"), params);
  auto from_zero = adam_of(dir.str("zero"), params);
  BOOST_TEST(from_zero->state().size() == params.size());
  for (const auto& p : params) {
    const auto* a = adam_state(*from_zero, p);
    const auto* b = adam_state(*from_ddp, p);
    BOOST_REQUIRE(a);
    BOOST_REQUIRE(b);
    BOOST_TEST(a->step() == b->step());
    BOOST_TEST(differs({a->exp_avg(), a->exp_avg_sq()}, {b->exp_avg(), b->exp_avg_sq()}) == "");
  }
}

// 2 epochs, a checkpoint, 2 more under zero (either stage) or ddp: as 4 epochs of zero.
BOOST_AUTO_TEST_CASE(a_zero_checkpoint_resumes_under_zero_and_under_ddp) {
  skein::testing::TempDir dir;
  const nlohmann::json zero = {{"plugin", "zero"}, {"stage", 2}};
  EngineRun whole(run_of(zero, kAdam, 4));
  same_start(whole);
  whole.fit();
  const auto expected = weights(whole, 0);
  {
    EngineRun first(run_of(zero, kAdam, 2));
    same_start(first);
    first.fit();
    first.each_rank([&](skein::testing::RankEngine& e) { e.save_checkpoint(dir.str("half")); });
  }
  for (const auto& parallel : {zero, nlohmann::json{{"plugin", "ddp"}}, nlohmann::json{{"plugin", "zero"}}}) {
    EngineRun rest(run_of(parallel, kAdam, 4));
    rest.each_rank([&](skein::testing::RankEngine& e) { e.resume(dir.str("half")); });
    BOOST_TEST(rest.fit() == (std::vector<long>{4, 4}), parallel.dump());
    // Under the same wrapper, bit-identical to the run never stopped (as ddp's resumes are).
    const bool exact = parallel == zero;
    BOOST_TEST(differs(weights(rest, 0), expected, exact) == "",
               parallel.dump() << ": " << differs(weights(rest, 0), expected, exact));
  }
  // Without the optimizer's state the continuation is another: the check can fail.
  EngineRun fresh_state(run_of(zero, kAdam, 4));
  fresh_state.each_rank([&](skein::testing::RankEngine& e) {
    e.resume(dir.str("half"));
    e.context().optimizer().state().clear();
  });
  fresh_state.fit();
  BOOST_TEST(differs(weights(fresh_state, 0), expected) != "");
}

// A ddp checkpoint resumes under zero: each rank keeps its own parameters' states.
BOOST_AUTO_TEST_CASE(a_ddp_checkpoint_resumes_under_zero) {
  skein::testing::TempDir dir;
  EngineRun ddp(run_of({{"plugin", "ddp"}}, kAdam, 2));
  ddp.fit();
  ddp.each_rank([&](skein::testing::RankEngine& e) { e.save_checkpoint(dir.str("ddp")); });
  EngineRun zero(run_of({{"plugin", "zero"}}, kAdam, 2));
  zero.each_rank([&](skein::testing::RankEngine& e) { e.resume(dir.str("ddp")); });
  for (int r = 0; r < 2; ++r) {
    auto& ctx = zero.rank(r).context();
    const auto params = ctx.model_base().parameters();
    const auto who = owners(zero, r);
    for (std::size_t i = 0; i < params.size(); ++i)
      BOOST_TEST((adam_state(ctx.optimizer(), params[i]) != nullptr) == (who[i] == r));
  }
}

// The mlp 4-1500-1500-3: 2.26 M elements, 2.25 M of them its 1500 x 1500
// matrix (weight2), which the flat partition cuts between the two ranks,
// each owning half of all elements. Each rank's part of the matrix (1.12 M
// elements) is more than a step piece (1 Mi), so Adam steps it in two.
EngineRunOptions large_run(const nlohmann::json& parallel, long epochs) {
  EngineRunOptions o = run_of(parallel, kAdam, epochs);
  o.config["model"] = {{"plugin", "mlp"}, {"hidden", {1500, 1500}}};
  return o;
}

// The elements of rank `rank`'s Adam state (its exp_avg tensors').
std::int64_t state_elements(EngineRun& run, int rank) {
  std::int64_t n = 0;
  for (const auto& entry : run.rank(rank).context().optimizer().state())
    n += static_cast<const torch::optim::AdamParamState&>(*entry.second).exp_avg().numel();
  return n;
}

std::size_t stepped_tensors(EngineRun& run, int rank) {
  std::size_t n = 0;
  for (const auto& group : run.rank(rank).context().optimizer().param_groups()) n += group.params().size();
  return n;
}

BOOST_AUTO_TEST_CASE(a_large_parameter_cut_between_ranks_is_stepped_as_ddp_steps_it_whole) {
  EngineRun ddp(large_run({{"plugin", "ddp"}}, 2));
  same_start(ddp);
  ddp.fit();
  const auto expected = weights(ddp, 0);
  std::int64_t total = 0;
  for (const auto& p : expected) total += p.numel();
  skein::testing::TempDir dir;
  for (int stage : {1, 2}) {
    EngineRun zero(large_run({{"plugin", "zero"}, {"stage", stage}}, 2));
    same_start(zero);
    zero.fit();
    for (int r = 0; r < 2; ++r)  // each rank's optimizer state: half of the model's
      BOOST_TEST(std::abs(2 * state_elements(zero, r) - total) <= 1, "stage " << stage << " rank " << r);
    // Rank 0: weight1, bias1 and its part of the matrix in two pieces; rank 1:
    // its part in two pieces, bias2, weight3 and bias3.
    BOOST_TEST(stepped_tensors(zero, 0) == 4u, "stage " << stage);
    BOOST_TEST(stepped_tensors(zero, 1) == 5u, "stage " << stage);
    BOOST_TEST(differs(weights(zero, 0), weights(zero, 1), true) == "", "stage " << stage);
    BOOST_TEST(differs(weights(zero, 0), expected) == "", "stage " << stage << ": " << differs(weights(zero, 0), expected));
  }
  // One epoch, a checkpoint: its optimizer.pt holds the matrix's whole state,
  // and the rest under ddp, or under zero (split into pieces again), is as 2 epochs of ddp.
  {
    EngineRun first(large_run({{"plugin", "zero"}, {"stage", 2}}, 1));
    same_start(first);
    first.fit();
    first.each_rank([&](skein::testing::RankEngine& e) { e.save_checkpoint(dir.str("half")); });
    const auto params = first.rank(0).context().model_base().parameters();
    auto saved = adam_of(dir.str("half"), params);
    const auto* matrix = adam_state(*saved, params[2]);
    BOOST_REQUIRE(matrix);
    BOOST_TEST(matrix->exp_avg().sizes() == params[2].sizes());
  }
  for (const auto& parallel : {nlohmann::json{{"plugin", "ddp"}}, nlohmann::json{{"plugin", "zero"}, {"stage", 2}}}) {
    EngineRun rest(large_run(parallel, 2));
    rest.each_rank([&](skein::testing::RankEngine& e) { e.resume(dir.str("half")); });
    rest.fit();
    BOOST_TEST(differs(weights(rest, 0), expected) == "", parallel.dump() << ": " << differs(weights(rest, 0), expected));
  }
}

// grad_clip clips the norm of the whole model's averaged gradient under
// either stage, as under ddp: under stage 2 a rank holds only its own
// parameters' gradients (and those of a parameter owned in parts), so the
// norm is summed over every rank's own. The mlp 4-64-64-3 has its 64 x 64
// matrix cut between the two ranks.
BOOST_AUTO_TEST_CASE(grad_clip_clips_the_global_norm_under_either_stage) {
  auto clipped = [](const nlohmann::json& parallel) {
    EngineRunOptions o = run_of(parallel, kAdam, 2);
    o.config["model"] = {{"plugin", "mlp"}, {"hidden", {64, 64}}};
    o.config["callbacks"] = {{{"plugin", "grad_clip"}, {"max_norm", 0.05}}};
    return o;
  };
  auto norms = [](EngineRun& run, int rank) {
    std::vector<double> out;
    for (const auto& epoch : run.rank(rank).context().history().epochs())
      for (const auto& row : epoch["batches"])
        if (row.contains("train_grad_norm")) out.push_back(row["train_grad_norm"].get<double>());
    return out;
  };
  EngineRun ddp(clipped({{"plugin", "ddp"}}));
  same_start(ddp);
  ddp.fit();
  const auto expected = norms(ddp, 0);
  BOOST_TEST_REQUIRE(!expected.empty());
  BOOST_TEST(*std::min_element(expected.begin(), expected.end()) > 0.05);  // every step was clipped
  for (int stage : {1, 2}) {
    EngineRun zero(clipped({{"plugin", "zero"}, {"stage", stage}}));
    same_start(zero);
    zero.fit();
    BOOST_TEST(differs(weights(zero, 0), weights(zero, 1), true) == "", "stage " << stage);
    BOOST_TEST(differs(weights(zero, 0), weights(ddp, 0)) == "",
               "stage " << stage << ": " << differs(weights(zero, 0), weights(ddp, 0)));
    for (int r = 0; r < 2; ++r) {
      const auto got = norms(zero, r);
      BOOST_TEST_REQUIRE(got.size() == expected.size());
      for (std::size_t i = 0; i < got.size(); ++i)
        BOOST_TEST(std::abs(got[i] - expected[i]) <= 1e-5 * expected[i],
                   "stage " << stage << " rank " << r << " step " << i << ": " << got[i] << " vs " << expected[i]);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_stage_outside_1_or_2_is_one_line) {
  const auto message = skein::testing::message_of<skein::ConfigError>(
      [&] { EngineRun run(run_of({{"plugin", "zero"}, {"stage", 3}}, kSgd)); });
  BOOST_TEST(message.find("stage") != std::string::npos, message);
  BOOST_TEST(message.find('\n') == std::string::npos, message);
}

// Live recovery mirrors each shard on the rank before its owner, which
// needs the owner's gradients there too: stage 1 only.
BOOST_AUTO_TEST_CASE(live_recovery_at_stage_2_is_one_line) {
  const auto message = skein::testing::message_of<skein::ConfigError>(
      [&] { EngineRun run(run_of({{"plugin", "zero"}, {"stage", 2}, {"live_recovery", true}}, kSgd)); });
  BOOST_TEST(message.find("live_recovery") != std::string::npos, message);
  BOOST_TEST(message.find("needs stage 1") != std::string::npos, message);
  BOOST_TEST(message.find('\n') == std::string::npos, message);
}

BOOST_AUTO_TEST_SUITE_END()
