#define BOOST_TEST_MODULE model_mlp
#include <boost/test/unit_test.hpp>

#include "skein/testing.hpp"

BOOST_FIXTURE_TEST_SUITE(model_mlp, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(does_what_every_model_does_on_flat_and_image_inputs) {
  BOOST_TEST(skein::testing::model_problem(harness, "mlp", {{"hidden", {8, 4}}}, {{6}, 3}) == "");
  BOOST_TEST(skein::testing::model_problem(harness, "mlp", {}, {{1, 5, 5}, 10}) == "");  // flattened
}

BOOST_AUTO_TEST_CASE(a_layer_without_units_names_the_option) {
  const skein::DataInfo info{{6}, 3};
  const auto message =
      skein::testing::message_of<skein::ConfigError>([&] { harness.create<skein::Model>("mlp", {{"hidden", {0}}}, &info); });
  BOOST_TEST(skein::testing::contains(message, "option 'hidden'"), message);
}

BOOST_AUTO_TEST_SUITE_END()
