#define BOOST_TEST_MODULE loss_smooth_l1
#include <boost/test/unit_test.hpp>

#include "skein/testing.hpp"

BOOST_FIXTURE_TEST_SUITE(loss_smooth_l1, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(does_what_every_loss_does) {
  BOOST_TEST(skein::testing::loss_problem(harness, "smooth_l1", {}, {{4}, 3}) == "");
  BOOST_TEST(skein::testing::loss_problem(harness, "smooth_l1", {}, {{4}, 1}) == "");  // one output
}

BOOST_AUTO_TEST_SUITE_END()
