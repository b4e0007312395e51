#define BOOST_TEST_MODULE parallel_ddp
#include <boost/test/unit_test.hpp>

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
