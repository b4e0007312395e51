#define BOOST_TEST_MODULE parallel_ddp
#include <boost/test/unit_test.hpp>

#include <functional>
#include <set>

#include "skein/testing.hpp"
#include "skein/torch_compat/backends.hpp"

// ddp on two ranks of the real engine (threads of this test over loopback).
using skein::testing::EngineRun;
using skein::testing::EngineRunOptions;

namespace {

EngineRunOptions two_ranks(const nlohmann::json& ddp) {
  EngineRunOptions o = skein::testing::small_run("parallel", ddp, 2);
  o.config["history"] = {{"plugin", "filestore"}};
  return o;
}

// Whether every parameter is the same on both ranks.
bool same_weights(EngineRun& run) {
  const auto a = run.rank(0).context().model_base().parameters();
  const auto b = run.rank(1).context().model_base().parameters();
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!torch::equal(a[i], b[i])) return false;
  return true;
}

// Rank r's loss: (r + 1) * scale * the sum of the elements of params[0, used):
// each of those gets the gradient (r + 1) * scale, 1.5 * scale averaged over
// the 2 ranks; the others get none.
void backward(const std::vector<torch::Tensor>& params, std::size_t used, int rank, double scale) {
  auto loss = torch::zeros({});
  for (std::size_t i = 0; i < used; ++i) loss = loss + params[i].sum();
  (loss * ((rank + 1) * scale)).backward();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(parallel_ddp)

BOOST_AUTO_TEST_CASE(ranks_start_and_stay_in_step) {
  for (const char* compression : {"none", "fp16"}) {
    EngineRun run(two_ranks({{"plugin", "ddp"}, {"compression", compression}}));
    BOOST_TEST(same_weights(run), compression);  // rank 0's initial weights were broadcast
    BOOST_TEST(run.fit() == (std::vector<long>{2, 2}));
    BOOST_TEST(same_weights(run), compression);  // every step applied the same averaged gradients
  }
}

BOOST_AUTO_TEST_CASE(metric_reductions_span_the_ranks) {
  EngineRun run(two_ranks({{"plugin", "ddp"}}));
  std::vector<std::vector<double>> sums(2), maxima(2);
  run.each_rank([&](skein::testing::RankEngine& e) {
    const int r = e.context().run().rank;
    std::vector<double> s{1.0 + r}, m{1.0 + r};
    e.context().parallel().all_reduce_sum(s);
    e.context().parallel().all_reduce_max(m);
    sums[r] = s;
    maxima[r] = m;
  });
  BOOST_TEST(sums[0] == (std::vector<double>{3.0}));
  BOOST_TEST(sums[1] == (std::vector<double>{3.0}));
  BOOST_TEST(maxima[1] == (std::vector<double>{2.0}));
}

// Gradients live in the buckets: with one bucket, every parameter's .grad is
// a slot of one buffer (no second copy of the gradients), on every rank.
BOOST_AUTO_TEST_CASE(gradients_are_slots_of_the_bucket) {
  EngineRun run(two_ranks({{"plugin", "ddp"}, {"bucket_cap_mb", 64}, {"first_bucket_mb", 64}}));
  BOOST_TEST(run.fit() == (std::vector<long>{2, 2}));
  for (int r = 0; r < 2; ++r) {
    const auto params = run.rank(r).context().model_base().parameters();
    std::set<const void*> slots;
    for (const auto& p : params) {
      BOOST_REQUIRE(p.grad().defined());
      BOOST_TEST(p.grad().is_alias_of(params.front().grad()), "rank " << r);
      slots.insert(p.grad().data_ptr());
    }
    BOOST_TEST(slots.size() == params.size());  // each its own slot
  }
}

// The averages are right whatever happened to .grad between steps (zeroed
// in place, set to none, replaced by another tensor: it is copied into its
// slot then), with gradient accumulation, across several buckets, and a
// parameter no rank uses keeps no gradient.
BOOST_AUTO_TEST_CASE(averages_do_not_depend_on_what_happened_to_grad) {
  EngineRun run(two_ranks({{"plugin", "ddp"}, {"bucket_cap_mb", 0.0001}, {"first_bucket_mb", 0.0001}}));
  std::vector<std::vector<std::string>> wrong(2);
  run.each_rank([&](skein::testing::RankEngine& e) {
    auto& ctx = e.context();
    const int r = ctx.run().rank;
    const auto params = ctx.model_base().parameters();
    const std::size_t used = params.size() - 1;  // the last one gets no gradient anywhere
    // Micro-batches of `scales`, on top of `kept` (the average already in .grad).
    auto step = [&](const std::string& what, std::vector<double> scales, double kept = 0) {
      for (std::size_t i = 0; i < scales.size(); ++i) {
        ctx.parallel().set_gradient_sync(i + 1 == scales.size());
        backward(params, used, r, scales[i]);
      }
      ctx.parallel().finish_gradients();
      double expected = kept;
      for (double scale : scales) expected += 1.5 * scale;
      for (std::size_t i = 0; i < used; ++i) {
        const auto& g = params[i].grad();
        if (!g.defined() || !torch::allclose(g, torch::full_like(g, expected)))
          wrong[r].push_back(what + ": parameter " + std::to_string(i) + " " +
                             (g.defined() ? std::to_string(g.mean().item<double>()) : "none") + " instead of " +
                             std::to_string(expected));
      }
      if (params[used].grad().defined()) wrong[r].push_back(what + ": the unused parameter has a gradient");
    };
    auto each_grad = [&](const std::function<void(torch::Tensor&)>& change) {
      for (std::size_t i = 0; i < used; ++i) change(params[i].mutable_grad());
    };
    step("first step", {1});
    ctx.optimizer().zero_grad();
    step("after the optimizer's zero_grad", {2});
    ctx.model_base().zero_grad();
    step("after the module's zero_grad", {2});
    each_grad([](torch::Tensor& g) { g = torch::Tensor(); });
    step("after .grad was set to none", {2});
    each_grad([](torch::Tensor& g) { g = torch::zeros_like(g); });
    step("after .grad was replaced", {2});
    step("without zero_grad", {1}, 3);
    ctx.optimizer().zero_grad();
    step("gradient accumulation", {1, 2});
    each_grad([](torch::Tensor& g) { g = torch::Tensor(); });
    step("gradient accumulation after .grad was set to none", {1, 2, 4});
  });
  BOOST_TEST(wrong[0].empty(), (wrong[0].empty() ? "" : wrong[0].front()));
  BOOST_TEST(wrong[1].empty(), (wrong[1].empty() ? "" : wrong[1].front()));
}

// NCCL takes CUDA tensors only: asked for where it cannot run, it is one
// line naming the option, before any process group is made.
BOOST_AUTO_TEST_CASE(nccl_where_it_cannot_run_is_one_line) {
  EngineRunOptions o = skein::testing::small_run("parallel", {{"plugin", "ddp"}, {"backend", "nccl"}}, 1);
  o.config["device"] = "cpu";
  const auto message = skein::testing::message_of<skein::ConfigError>([&] { EngineRun run(o); });
  const std::string why = SKEIN_TORCH_NCCL ? "'nccl' needs the run on a CUDA device; this one is on cpu"
                                           : "'nccl' is not compiled into this build (its libtorch has gloo)";
  BOOST_TEST(message.find("option 'backend'") != std::string::npos, message);
  BOOST_TEST(message.find(why) != std::string::npos, message);
  BOOST_TEST(message.find('\n') == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
