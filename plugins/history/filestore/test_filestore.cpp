#define BOOST_TEST_MODULE history_filestore
#include <boost/test/unit_test.hpp>

#include <boost/filesystem.hpp>

#include "skein/testing.hpp"

BOOST_AUTO_TEST_SUITE(history_filestore)

BOOST_AUTO_TEST_CASE(every_rank_holds_the_batches_of_all_ranks_in_one_order) {
  skein::testing::EngineRun run(skein::testing::small_run("history", {{"plugin", "filestore"}}, 2));
  BOOST_TEST(run.fit() == (std::vector<long>{2, 2}));
  BOOST_TEST(skein::testing::history_sync_problem(run) == "");
  BOOST_TEST(run.rank(0).context().history().get(0, "batches").size() == 2u * (3u + 1u));  // train and valid
  BOOST_TEST(boost::filesystem::exists(run.run_dir() + "/history.filestore"));  // by default in the run directory
}

BOOST_AUTO_TEST_SUITE_END()
