#define BOOST_TEST_MODULE history_tcpstore
#include <boost/test/unit_test.hpp>

#include "skein/testing.hpp"

BOOST_AUTO_TEST_SUITE(history_tcpstore)

BOOST_AUTO_TEST_CASE(every_rank_holds_the_batches_of_all_ranks_in_one_order) {
  skein::testing::EngineRun run(skein::testing::small_run("history", {{"plugin", "tcpstore"}}, 2));
  BOOST_TEST(run.fit() == (std::vector<long>{2, 2}));
  BOOST_TEST(skein::testing::history_sync_problem(run) == "");
  BOOST_TEST(run.rank(0).context().history().get(0, "batches").size() == 2u * (3u + 1u));  // train and valid
}

BOOST_AUTO_TEST_SUITE_END()
