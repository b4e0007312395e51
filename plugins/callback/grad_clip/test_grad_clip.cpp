#define BOOST_TEST_MODULE grad_clip
#include <boost/test/unit_test.hpp>

#include "skein/testing.hpp"

// The grad_clip callback on the real engine (EngineRun's step API: the
// forward, backward, clipping hook and optimizer step of `skein train`).
namespace {

struct Step {
  double largest_change;  // of any parameter, by the optimizer step
  double recorded_norm;   // the batch's train_grad_norm
};

// One batch whose gradient is large (inputs of 100), through the small run's
// mlp with a grad_clip of `options`, under SGD with lr 1.
Step one_step(const nlohmann::json& options) {
  auto engine = skein::testing::small_run("optimizer", {{"plugin", "sgd"}, {"lr", 1.0}});
  nlohmann::json clip = options;
  clip["plugin"] = "grad_clip";
  engine.config["callbacks"] = {clip};
  skein::testing::EngineRun run(engine);
  skein::testing::RankEngine& rank = run.rank(0);
  std::vector<torch::Tensor> before;
  for (const auto& p : rank.context().model_base().parameters()) before.push_back(p.detach().clone());
  rank.train_step(torch::full({8, 4}, 100.0), torch::zeros({8}, torch::kLong));
  rank.end_epoch();
  double largest = 0;
  const auto after = rank.context().model_base().parameters();
  for (std::size_t i = 0; i < after.size(); ++i)
    largest = std::max(largest, (after[i] - before[i]).abs().max().item<double>());
  return {largest, rank.context().history().get(-1, "batches")[0]["train_grad_norm"].get<double>()};
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(grad_clip, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(by_norm_bounds_the_update_and_records_the_norm_before_clipping) {
  const auto clipped = one_step({{"max_norm", 1e-3}});
  const auto free = one_step({{"max_norm", 1e9}});
  BOOST_TEST(clipped.largest_change <= 1e-3 * (1 + 1e-5));  // lr 1 x a gradient of norm 1e-3
  BOOST_TEST(free.largest_change > 1.0);
  BOOST_TEST(clipped.recorded_norm == free.recorded_norm, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(clipped.recorded_norm > 1.0);
}

BOOST_AUTO_TEST_CASE(by_value_clamps_every_gradient) {
  const auto clipped = one_step({{"mode", "value"}, {"clip_value", 0.01}});
  BOOST_TEST(clipped.largest_change <= 0.01 * (1 + 1e-6));
  BOOST_TEST(clipped.largest_change > 0.005);
  BOOST_TEST(clipped.recorded_norm > 1.0);
}

BOOST_AUTO_TEST_CASE(bad_options_name_the_option) {
  const auto err = skein::testing::message_of<skein::ConfigError>([&] { make("grad_clip", {{"mode", "both"}}); });
  BOOST_TEST(err.find("(plugin 'grad_clip'): option 'mode' must be norm or value") != std::string::npos, err);
  BOOST_CHECK_THROW(make("grad_clip", {{"max_norm", 0}}), skein::ConfigError);
  BOOST_CHECK_THROW(make("grad_clip", {{"max_nrom", 1}}), skein::ConfigError);
}

BOOST_AUTO_TEST_SUITE_END()
