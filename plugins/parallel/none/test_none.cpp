#define BOOST_TEST_MODULE parallel_none
#include <boost/test/unit_test.hpp>

#include "skein/errors.hpp"
#include "skein/testing.hpp"

using skein::testing::EngineRun;
using skein::testing::small_run;

BOOST_AUTO_TEST_SUITE(parallel_none)

BOOST_AUTO_TEST_CASE(one_process_trains_every_epoch) {
  EngineRun run(small_run("parallel", {{"plugin", "none"}}));
  BOOST_TEST(run.fit() == (std::vector<long>{2}));
  BOOST_TEST(run.rank(0).context().history().size() == 2u);
}

BOOST_AUTO_TEST_CASE(several_processes_are_refused_naming_ddp) {
  const auto message = skein::testing::message_of<skein::ConfigError>(
      [&] { EngineRun run(small_run("parallel", {{"plugin", "none"}}, 2)); });
  BOOST_TEST(skein::testing::contains(message, "parallel 'none' runs on one process, but WORLD_SIZE is 2; use parallel 'ddp'"),
             message);
}

BOOST_AUTO_TEST_SUITE_END()
