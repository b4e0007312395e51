#define BOOST_TEST_MODULE dataset_synthetic
#include <boost/test/unit_test.hpp>

#include "skein/dataset.hpp"
#include "skein/testing.hpp"

BOOST_FIXTURE_TEST_SUITE(dataset_synthetic, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(splits_have_the_asked_shape_classes_and_sizes) {
  auto data = harness.create<skein::Dataset>("synthetic", {{"samples", 40}, {"test_samples", 10}, {"shape", {2, 3}}, {"classes", 5}});
  const auto info = data->info();
  BOOST_TEST(info.input_shape == (std::vector<std::int64_t>{2, 3}));
  BOOST_TEST(info.num_classes == 5);
  const auto train = data->train();
  BOOST_TEST((train.inputs.sizes() == torch::IntArrayRef({40, 2, 3})));
  BOOST_TEST(train.targets.max().item<std::int64_t>() < 5);
  BOOST_TEST(data->test()->targets.size(0) == 10);
  BOOST_TEST(!harness.create<skein::Dataset>("synthetic", {{"test_samples", 0}})->test().has_value());
}

BOOST_AUTO_TEST_CASE(its_own_seed_alone_decides_the_data) {
  const nlohmann::json options = {{"samples", 20}, {"seed", 3}};
  auto a = harness.create<skein::Dataset>("synthetic", options)->train();
  torch::manual_seed(99);  // the run's generator does not matter
  auto b = harness.create<skein::Dataset>("synthetic", options)->train();
  BOOST_TEST(torch::equal(a.inputs, b.inputs));
  auto other = harness.create<skein::Dataset>("synthetic", {{"samples", 20}, {"seed", 4}})->train();
  BOOST_TEST(!torch::equal(a.inputs, other.inputs));
}

BOOST_AUTO_TEST_SUITE_END()
