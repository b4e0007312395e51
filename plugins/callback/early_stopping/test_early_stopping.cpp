#define BOOST_TEST_MODULE early_stopping
#include <boost/test/unit_test.hpp>

#include <limits>

#include "skein/testing.hpp"

// The early_stopping callback alone, against a context whose history the test writes.
using skein::testing::FakeRun;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

BOOST_FIXTURE_TEST_SUITE(early_stopping, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(early_stopping_counts_epochs_without_improvement_and_nan_never_improves) {
  FakeRun ctx(harness);
  auto es = make("early_stopping", {{"patience", 3}});
  // Improves at 1 and 2; 3, 4 and the NaN at 5 do not.
  BOOST_TEST(ctx.stop_epoch(*es, "valid_loss", {1.0, 0.9, 0.95, 0.91, kNaN, 0.5}) == 5);
  BOOST_TEST(ctx.stop_reason.find("valid_loss did not improve for 3 epochs") != std::string::npos, ctx.stop_reason);
}

BOOST_AUTO_TEST_CASE(early_stopping_direction_comes_from_the_name_unless_given) {
  FakeRun acc(harness);
  auto higher = make("early_stopping", {{"monitor", "valid_acc"}, {"patience", 1}});
  BOOST_TEST(acc.stop_epoch(*higher, "valid_acc", {0.5, 0.6, 0.55}) == 3);
  FakeRun flipped(harness);
  auto lower = make("early_stopping", {{"monitor", "valid_acc"}, {"patience", 1}, {"lower_is_better", true}});
  BOOST_TEST(flipped.stop_epoch(*lower, "valid_acc", {0.5, 0.6}) == 2);
}

BOOST_AUTO_TEST_CASE(early_stopping_thresholds) {
  FakeRun rel(harness);
  auto es = make("early_stopping", {{"patience", 1}, {"threshold", 0.1}});
  BOOST_TEST(rel.stop_epoch(*es, "valid_loss", {1.0, 0.95}) == 2);  // needs < 0.9
  FakeRun abs(harness);
  auto es2 = make("early_stopping", {{"patience", 1}, {"threshold", 0.01}, {"threshold_mode", "abs"}});
  BOOST_TEST(abs.stop_epoch(*es2, "valid_loss", {1.0, 0.98, 0.975}) == 3);
}

BOOST_AUTO_TEST_CASE(early_stopping_state_survives_a_restart) {
  FakeRun ctx(harness);
  auto first = make("early_stopping", {{"patience", 2}});
  BOOST_TEST(ctx.stop_epoch(*first, "valid_loss", {1.0, 1.1}) == 0);
  auto second = make("early_stopping", {{"patience", 2}});
  second->load_state(nlohmann::json::parse(first->state().dump()));
  BOOST_TEST(ctx.stop_epoch(*second, "valid_loss", {1.2}) == 3);
}

BOOST_AUTO_TEST_SUITE_END()
