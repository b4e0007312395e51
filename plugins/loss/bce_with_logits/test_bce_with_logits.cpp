#define BOOST_TEST_MODULE bce_with_logits
#include <boost/test/unit_test.hpp>

#include <torch/torch.h>

#include "skein/testing.hpp"
#include "skein/loss.hpp"

// The bce_with_logits loss alone: pos_weight, and one that does not fit the outputs.
BOOST_AUTO_TEST_CASE(pos_weight_weighs_the_positive_term) {
  skein::testing::Harness harness;
  torch::manual_seed(5);
  const auto logits = torch::randn({6, 1});
  const auto labels = torch::tensor({1.0f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f}).unsqueeze(1);
  const auto p = torch::sigmoid(logits);
  const double want = (-(3.0 * labels * torch::log(p) + (1 - labels) * torch::log(1 - p))).mean().item<double>();
  auto weighted = harness.create<skein::Loss>("bce_with_logits", {{"pos_weight", {3.0}}});
  BOOST_TEST(weighted->compute(logits, labels).item<double>() == want, boost::test_tools::tolerance(1e-5));

  const auto wide = skein::testing::message_of<skein::ConfigError>(
      [&] { harness.create<skein::Loss>("bce_with_logits", {{"pos_weight", {1.0, 2.0}}})->compute(logits, labels); });
  BOOST_TEST(wide.find("option 'pos_weight' has 2 entries, but the model outputs 1 values per sample") !=
                 std::string::npos, wide);
}
