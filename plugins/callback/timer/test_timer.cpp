#define BOOST_TEST_MODULE callback_timer
#include <boost/test/unit_test.hpp>

#include "skein/testing.hpp"

BOOST_AUTO_TEST_SUITE(callback_timer)

BOOST_AUTO_TEST_CASE(every_epoch_records_the_time_of_each_phase) {
  skein::testing::EngineRun run(skein::testing::small_run("callbacks", {{{"plugin", "timer"}}}));
  run.fit();
  const auto& h = run.rank(0).context().history();
  for (long e = 0; e < 2; ++e) {
    BOOST_TEST(h.get(e, "train_dur").get<double>() > 0);
    BOOST_TEST(h.get(e, "valid_dur").get<double>() > 0);
    BOOST_TEST(h.get(e, "train_dur").get<double>() <= h.get(e, "dur").get<double>());
  }
}

BOOST_AUTO_TEST_SUITE_END()
