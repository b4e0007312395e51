#define BOOST_TEST_MODULE optimizer_rmsprop
#include <boost/test/unit_test.hpp>

#include "skein/testing.hpp"
#include "skein/optimizer.hpp"

BOOST_FIXTURE_TEST_SUITE(optimizer_rmsprop, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(does_what_every_optimizer_does) {
  BOOST_TEST(skein::testing::optimizer_problem(harness, "rmsprop", {{"lr", 0.05}}) == "");
  BOOST_TEST(skein::testing::optimizer_problem(harness, "rmsprop", {{"lr", 0.05}, {"weight_decay", 0.01}}) == "");
}

BOOST_AUTO_TEST_CASE(centered_with_momentum_steps_and_alpha_is_bounded) {
  BOOST_TEST(skein::testing::optimizer_problem(harness, "rmsprop", {{"lr", 0.01}, {"momentum", 0.5}, {"centered", true}}) == "");
  const auto message = skein::testing::message_of<skein::ConfigError>([&] {
    harness.create<skein::OptimizerFactory>("rmsprop", {{"alpha", 2.0}})->create({torch::zeros({1}, torch::requires_grad())});
  });
  BOOST_TEST(skein::testing::contains(message, "option 'alpha'"), message);
}

BOOST_AUTO_TEST_SUITE_END()
