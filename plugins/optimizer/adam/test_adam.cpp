#define BOOST_TEST_MODULE optimizer_adam
#include <boost/test/unit_test.hpp>

#include "skein/testing.hpp"

BOOST_FIXTURE_TEST_SUITE(optimizer_adam, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(does_what_every_optimizer_does) {
  BOOST_TEST(skein::testing::optimizer_problem(harness, "adam", {{"lr", 0.05}}) == "");
  BOOST_TEST(skein::testing::optimizer_problem(harness, "adam", {{"lr", 0.05}, {"weight_decay", 0.01}}) == "");
}

BOOST_AUTO_TEST_SUITE_END()
