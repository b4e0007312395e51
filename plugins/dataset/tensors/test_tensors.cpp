#define BOOST_TEST_MODULE dataset_tensors
#include <boost/test/unit_test.hpp>

#include <torch/serialize.h>  // torch::pickle_save

#include "skein/dataset.hpp"
#include "skein/errors.hpp"
#include "skein/testing.hpp"

namespace {

// A file as Python's torch.save({"inputs": x, "targets": y}, path) writes it.
std::string split_file(skein::testing::Harness& harness, const std::string& name, const torch::Tensor& x,
                       const torch::Tensor& y) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  dict.insert("inputs", x);
  dict.insert("targets", y);
  const std::vector<char> bytes = torch::pickle_save(dict);
  return harness.write_file(name, std::string(bytes.begin(), bytes.end()));
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(dataset_tensors, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(reads_the_splits_and_infers_the_classes) {
  const auto x = torch::randn({6, 3});
  const auto y = torch::tensor({0, 1, 2, 3, 0, 1}, torch::kLong);
  const auto train = split_file(harness, "train.pt", x, y);
  const auto test = split_file(harness, "test.pt", torch::randn({2, 3}), torch::tensor({1, 0}, torch::kLong));
  auto data = harness.create<skein::Dataset>("tensors", {{"train", train}, {"test", test}});
  BOOST_TEST(data->info().num_classes == 4);  // largest label + 1
  BOOST_TEST(data->info().input_shape == (std::vector<std::int64_t>{3}));
  BOOST_TEST(torch::equal(data->train().inputs, x));
  BOOST_TEST(data->test()->inputs.size(0) == 2);
}

BOOST_AUTO_TEST_CASE(a_test_split_of_another_shape_is_refused) {
  const auto train = split_file(harness, "train.pt", torch::randn({4, 3}), torch::zeros({4}, torch::kLong));
  const auto test = split_file(harness, "test.pt", torch::randn({2, 5}), torch::zeros({2}, torch::kLong));
  const auto message = skein::testing::message_of(
      [&] { harness.create<skein::Dataset>("tensors", {{"train", train}, {"test", test}}); });
  BOOST_TEST(skein::testing::contains(message, "test.pt"), message);
}

BOOST_AUTO_TEST_SUITE_END()
