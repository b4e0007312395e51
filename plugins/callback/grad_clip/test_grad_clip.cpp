#define BOOST_TEST_MODULE grad_clip
#include <boost/test/unit_test.hpp>

#include <torch/nn/modules/linear.h>

#include "skein/testing.hpp"

// The grad_clip callback alone, on a one-layer model driven batch by batch.
namespace {

using skein::testing::FakeRun;

struct Linear final : skein::Model {
  Linear() : layer(register_module("layer", torch::nn::Linear(4, 1))) {}
  torch::Tensor forward(const torch::Tensor& x) override { return layer(x); }
  torch::nn::Linear layer;
};

struct Step {
  double largest_change;  // of any parameter, by the optimizer step
  double recorded_norm;   // the batch's train_grad_norm
};

// One batch whose gradient is large (targets far from the outputs), with a
// grad_clip of `options`, under SGD with lr 1.
Step one_step(skein::testing::CallbackFixture& f, const nlohmann::json& options) {
  torch::manual_seed(0);
  skein::testing::FakeRunOptions run;
  run.model = std::make_shared<Linear>();
  run.lr = 1.0;
  FakeRun ctx(f.harness, run);
  auto clip = f.make("grad_clip", options);
  std::vector<torch::Tensor> before;
  for (const auto& p : run.model->parameters()) before.push_back(p.detach().clone());
  clip->on_train_begin(ctx);
  ctx.begin_epoch();
  const auto inputs = torch::ones({8, 4});
  const auto targets = torch::full({8, 1}, 100.0);
  ctx.train_batch(*clip, inputs, targets);
  ctx.end_epoch();
  double largest = 0;
  const auto after = run.model->parameters();
  for (std::size_t i = 0; i < after.size(); ++i)
    largest = std::max(largest, (after[i] - before[i]).abs().max().item<double>());
  return {largest, ctx.history().get(-1, "batches")[0]["train_grad_norm"].get<double>()};
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(grad_clip, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(by_norm_bounds_the_update_and_records_the_norm_before_clipping) {
  const auto clipped = one_step(*this, {{"max_norm", 1e-3}});
  const auto free = one_step(*this, {{"max_norm", 1e9}});
  BOOST_TEST(clipped.largest_change <= 1e-3 * (1 + 1e-5));  // lr 1 x a gradient of norm 1e-3
  BOOST_TEST(free.largest_change > 1.0);
  BOOST_TEST(clipped.recorded_norm == free.recorded_norm, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(clipped.recorded_norm > 1.0);
}

BOOST_AUTO_TEST_CASE(by_value_clamps_every_gradient) {
  const auto clipped = one_step(*this, {{"mode", "value"}, {"clip_value", 0.01}});
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
