#define BOOST_TEST_MODULE callback_progress_bar
#include <boost/test/unit_test.hpp>

#include <iostream>

#include "skein/testing.hpp"

BOOST_AUTO_TEST_SUITE(callback_progress_bar)

BOOST_AUTO_TEST_CASE(lines_mode_reports_each_epoch_on_stdout) {
  skein::testing::EngineRun run(
      skein::testing::small_run("callbacks", {{{"plugin", "progress_bar"}, {"mode", "lines"}, {"every", 2}}}));
  std::ostringstream out;
  auto* stdout_buffer = std::cout.rdbuf(out.rdbuf());
  run.fit();
  std::cout.rdbuf(stdout_buffer);
  BOOST_TEST(skein::testing::contains(out.str(), "Epoch 1"), out.str());
  BOOST_TEST(skein::testing::contains(out.str(), "Epoch 2"), out.str());
}

BOOST_AUTO_TEST_SUITE_END()
