// The engine's step API (skein/training/engine/step_driver.hpp), as a session and
// the harness's RankEngine drive it: epochs opened by the first step,
// batches numbered per epoch and split, records read at each step.
#include <boost/test/unit_test.hpp>

#include "engine_fixture.hpp"

namespace {

skein::testing::EngineRunOptions one_rank() {
  skein::testing::EngineRunOptions o;
  o.config = skein::testing::small_run_config();
  return o;
}

struct DriverFixture {
  skein::testing::EngineRun run{one_rank()};
  skein::testing::RankEngine& rank = run.rank(0);
  const torch::Tensor x = torch::randn({4, 4});
  const torch::Tensor y = torch::tensor({0, 1, 2, 0}, torch::kLong);

  const skein::History& history() { return rank.context().history(); }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(step_driver, DriverFixture)

BOOST_AUTO_TEST_CASE(the_first_step_opens_the_training_and_an_epoch_whose_records_are_read_at_once) {
  BOOST_TEST(history().size() == 0u);
  rank.train_step(x, y);
  BOOST_TEST(history().size() == 1u);
  BOOST_TEST(rank.context().epoch() == 1);
  const auto rows = history().batches().rows();
  BOOST_TEST(rows == 1u);  // flushed: the step's record is there before the epoch ends
  rank.train_step(x, y);
  rank.eval_step(x, y);
  BOOST_TEST(history().batches().rows() == 3u);
  BOOST_TEST(!rank.end_epoch());  // no callback asked to stop
  const auto batches = history().get(0, "batches");
  BOOST_TEST(batches.size() == 3u);
  BOOST_TEST(batches[0].contains("train_loss"));
  BOOST_TEST(batches[2].contains("valid_loss"));
  BOOST_TEST(history().epochs()[0].contains("valid_loss"));  // the epoch's value, from its eval steps
}

BOOST_AUTO_TEST_CASE(an_epoch_without_steps_still_takes_part_and_the_next_step_opens_a_new_one) {
  rank.train_step(x, y);
  BOOST_TEST(!rank.end_epoch());
  BOOST_TEST(!rank.end_epoch());  // nothing stepped: recorded all the same
  BOOST_TEST(history().size() == 2u);
  BOOST_TEST(history().get(1, "batches").size() == 0u);
  rank.end_training();
  rank.end_training();  // a second end is nothing
}

BOOST_AUTO_TEST_SUITE_END()
