#define BOOST_TEST_MODULE callbacks
#include <boost/test/unit_test.hpp>

#include "skein/testing.hpp"

// What the bundled callbacks share: one rule for a missing monitored key, one kind of error for bad options.
using skein::testing::FakeRun;

BOOST_FIXTURE_TEST_SUITE(callbacks, skein::testing::CallbackFixture)

// One rule for every monitoring callback: a key the history lacks is a
// config error naming the plugin, the key and the keys the history holds.
BOOST_AUTO_TEST_CASE(a_missing_monitored_key_fails_alike_in_every_callback) {
  const std::vector<std::pair<std::string, nlohmann::json>> monitoring = {
      {"early_stopping", {{"monitor", "valid_los"}}},
      {"checkpoint", {{"monitor", "valid_los"}}},
      {"lr_scheduler", {{"policy", "plateau"}, {"monitor", "valid_los"}}}};
  for (const auto& [name, options] : monitoring) {
    FakeRun ctx(harness);
    auto cb = make(name, options);
    cb->on_train_begin(ctx);
    ctx.epoch_with("valid_loss", 1.0);
    try {
      cb->on_epoch_end(ctx);
      BOOST_ERROR(name + ": expected an error");
    } catch (const skein::ConfigError& e) {
      const std::string what = e.what();
      BOOST_TEST(what.find("(plugin '" + name + "'): option 'monitor' names 'valid_los'") != std::string::npos, what);
      // The keys the history holds (lr_scheduler has recorded its lr by then).
      BOOST_TEST(what.find("(it holds: ") != std::string::npos, what);
      BOOST_TEST(what.find("valid_loss)") != std::string::npos, what);
    }
  }
  BOOST_CHECK_THROW(make("early_stopping", {{"patience", 0}}), skein::ConfigError);
}

BOOST_AUTO_TEST_CASE(bad_callback_options_are_config_errors) {
  BOOST_CHECK_THROW(make("lr_scheduler", {{"policy", "exp"}}), skein::ConfigError);
  BOOST_CHECK_THROW(make("grad_clip", {{"mode", "both"}}), skein::ConfigError);
  BOOST_CHECK_THROW(make("scoring", {{"scores", {"valid_acc"}}}), skein::ConfigError);
  BOOST_CHECK_THROW(make("scoring", {{"scores", {"test_acc"}}}), skein::ConfigError);
  BOOST_CHECK_THROW(make("checkpoint", {{"keep_last", 0}}), skein::ConfigError);
  BOOST_CHECK_THROW(make("progress_bar", {{"mode", "fancy"}}), skein::ConfigError);
}

BOOST_AUTO_TEST_SUITE_END()
