#define BOOST_TEST_MODULE cross_entropy
#include <boost/test/unit_test.hpp>

#include <torch/torch.h>

#include "skein/testing.hpp"
#include "skein/loss.hpp"

// The cross_entropy loss alone: class weights, and a weight list that does not fit.
BOOST_AUTO_TEST_CASE(class_weights_weigh_each_sample_by_its_class) {
  skein::testing::Harness harness;
  torch::manual_seed(5);
  const auto scores = torch::randn({6, 3});
  const auto ids = torch::tensor({0, 1, 2, 2, 1, 2}, torch::kInt64);
  const auto per_sample = -torch::log_softmax(scores, 1).gather(1, ids.unsqueeze(1)).squeeze(1);
  const auto w = torch::tensor({1.0f, 2.0f, 0.5f});
  const double want = ((per_sample * w.index_select(0, ids)).sum() / w.index_select(0, ids).sum()).item<double>();
  auto weighted = harness.create<skein::Loss>("cross_entropy", {{"weight", {1.0, 2.0, 0.5}}});
  BOOST_TEST(weighted->compute(scores, ids).item<double>() == want, boost::test_tools::tolerance(1e-6));

  const auto wrong = skein::testing::message_of<skein::ConfigError>(
      [&] { harness.create<skein::Loss>("cross_entropy", {{"weight", {1.0, 2.0}}})->compute(scores, ids); });
  BOOST_TEST(wrong.find("loss (plugin 'cross_entropy'): option 'weight' has 2 entries, but the model outputs 3 "
                        "class scores") != std::string::npos, wrong);
}

// All weights 0: every batch's loss would be 0 / 0, NaN, and the run would
// train on NaN to the end. Refused when the loss is made; one 0 is fine.
BOOST_AUTO_TEST_CASE(all_zero_class_weights_are_refused_when_the_loss_is_made) {
  skein::testing::Harness harness;
  const auto zero = skein::testing::message_of<skein::ConfigError>(
      [&] { harness.create<skein::Loss>("cross_entropy", {{"weight", {0.0, 0.0, 0.0}}}); });
  BOOST_TEST(zero.find("option 'weight' is all 0") != std::string::npos, zero);
  const auto scores = torch::randn({4, 3});
  const auto ids = torch::tensor({0, 1, 2, 1}, torch::kInt64);
  auto one_zero = harness.create<skein::Loss>("cross_entropy", {{"weight", {0.0, 1.0, 1.0}}});
  BOOST_TEST(std::isfinite(one_zero->compute(scores, ids).item<double>()));
}
