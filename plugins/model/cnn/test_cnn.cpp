#define BOOST_TEST_MODULE model_cnn
#include <boost/test/unit_test.hpp>

#include "skein/testing.hpp"

BOOST_FIXTURE_TEST_SUITE(model_cnn, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(does_what_every_model_does_on_images) {
  BOOST_TEST(skein::testing::model_problem(harness, "cnn", {{"channels", {4}}, {"hidden", 8}}, {{1, 8, 8}, 5}) == "");
  BOOST_TEST(skein::testing::model_problem(harness, "cnn", {{"channels", {2, 4}}, {"hidden", 8}}, {{3, 12, 12}, 2}) == "");
}

BOOST_AUTO_TEST_SUITE_END()
