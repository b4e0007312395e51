// stop_at_accuracy tested the way Skein tests its own plugins: created by
// name through the SDK's harness (skein/testing.hpp), with its options
// checked as `skein train` checks them, and driven through a fake run.
#define BOOST_TEST_MODULE stop_at_accuracy
#include <boost/test/unit_test.hpp>

#include <skein/testing.hpp>

namespace {

// The harness finds the plugin this project built (STOP_AT_ACCURACY_PLUGIN,
// set by CMakeLists.txt) besides the installed ones.
struct Fixture {
  skein::testing::Harness harness{{{STOP_AT_ACCURACY_PLUGIN}}};
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(stop_at_accuracy, Fixture)

BOOST_AUTO_TEST_CASE(stops_at_the_first_epoch_that_reaches_the_target) {
  auto cb = harness.create<skein::Callback>("stop_at_accuracy", {{"target", 0.8}});
  skein::testing::FakeRun run(harness);
  BOOST_TEST(run.stop_epoch(*cb, "valid_acc", {0.5, 0.79, 0.8, 0.9}) == 3);
  BOOST_TEST(run.stop_reason == "valid_acc reached 0.800000");
}

BOOST_AUTO_TEST_CASE(a_target_out_of_range_is_an_error_naming_the_option) {
  const auto err = skein::testing::message_of<skein::ConfigError>(
      [&] { harness.create<skein::Callback>("stop_at_accuracy", {{"target", 1.5}}); });
  BOOST_TEST(err == "callbacks[0] (plugin 'stop_at_accuracy'): option 'target' must be in (0, 1]");
  BOOST_CHECK_THROW(harness.create<skein::Callback>("stop_at_accuracy", {{"targt", 0.5}}), skein::ConfigError);
}

BOOST_AUTO_TEST_SUITE_END()
