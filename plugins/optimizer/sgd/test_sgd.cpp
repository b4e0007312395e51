#define BOOST_TEST_MODULE optimizer_sgd
#include <boost/test/unit_test.hpp>

#include "skein/testing.hpp"
#include "skein/optimizer.hpp"

BOOST_FIXTURE_TEST_SUITE(optimizer_sgd, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(does_what_every_optimizer_does) {
  BOOST_TEST(skein::testing::optimizer_problem(harness, "sgd", {{"lr", 0.05}}) == "");
  BOOST_TEST(skein::testing::optimizer_problem(harness, "sgd", {{"lr", 0.05}, {"weight_decay", 0.01}}) == "");
}

BOOST_AUTO_TEST_CASE(momentum_variants_step_and_nesterov_needs_momentum) {
  BOOST_TEST(skein::testing::optimizer_problem(harness, "sgd", {{"lr", 0.05}, {"momentum", 0.9}, {"nesterov", true}}) == "");
  const auto message = skein::testing::message_of<skein::ConfigError>([&] {
    harness.create<skein::OptimizerFactory>("sgd", {{"nesterov", true}})->create({torch::zeros({1}, torch::requires_grad())});
  });
  BOOST_TEST(skein::testing::contains(message, "option 'nesterov'"), message);
}

BOOST_AUTO_TEST_SUITE_END()
