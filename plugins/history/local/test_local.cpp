#define BOOST_TEST_MODULE history_local
#include <boost/test/unit_test.hpp>

#include "skein/testing.hpp"

using skein::testing::EngineRun;
using skein::testing::small_run;

BOOST_AUTO_TEST_SUITE(history_local)

BOOST_AUTO_TEST_CASE(one_process_records_every_batch_and_epoch) {
  EngineRun run(small_run("history", {{"plugin", "local"}}));
  run.fit();
  const auto& h = run.rank(0).context().history();
  BOOST_TEST(h.size() == 2u);
  BOOST_TEST(h.get(0, "batches").size() == 6u + 2u);  // 48 training samples in 6 batches, 16 valid in 2
  BOOST_TEST(h.get(-1, "valid_loss").is_number());
}

BOOST_AUTO_TEST_CASE(each_rank_keeps_only_its_own_batches) {
  EngineRun run(small_run("history", {{"plugin", "local"}}, 2));
  run.fit();
  BOOST_TEST(run.rank(0).context().history().get(0, "batches").size() == 3u + 1u);  // half of each split's
  BOOST_TEST(run.rank(1).context().history().get(0, "batches").size() == 3u + 1u);
  BOOST_TEST(skein::testing::history_sync_problem(run) != "");  // unsynced: the ranks' histories differ
}

BOOST_AUTO_TEST_SUITE_END()
