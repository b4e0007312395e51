#define BOOST_TEST_MODULE terminate_on_nan
#include <boost/test/unit_test.hpp>

#include <limits>

#include "skein/testing.hpp"

// The terminate_on_nan callback alone, fed batch losses.
namespace {

using skein::testing::FakeRun;

// The stop reason after train batches of these losses in epoch 1 ("" if none).
std::string reason_after(skein::testing::CallbackFixture& f, const std::vector<double>& losses) {
  FakeRun ctx(f.harness);
  auto cb = f.make("terminate_on_nan");
  cb->on_train_begin(ctx);
  ctx.begin_epoch();
  const auto x = torch::zeros({2, 1}), y = torch::zeros({2}, torch::kLong);
  for (double loss : losses) ctx.train_batch(*cb, x, y, torch::tensor(loss));
  ctx.end_epoch();
  return ctx.stop_reason;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(terminate_on_nan, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(a_non_finite_training_loss_stops_naming_the_epoch_and_batch) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  BOOST_TEST(reason_after(*this, {1.0, 0.5}) == "");
  BOOST_TEST(reason_after(*this, {1.0, nan, inf}) == "train_loss is NaN at epoch 1, batch 1 (lower the learning rate?)");
  BOOST_TEST(reason_after(*this, {inf}) == "train_loss is infinite at epoch 1, batch 0 (lower the learning rate?)");
}

BOOST_AUTO_TEST_CASE(it_takes_no_options) {
  BOOST_CHECK_THROW(make("terminate_on_nan", {{"patience", 1}}), skein::ConfigError);
}

BOOST_AUTO_TEST_SUITE_END()
