#define BOOST_TEST_MODULE callback_print_log
#include <boost/test/unit_test.hpp>

#include "skein/testing.hpp"

BOOST_AUTO_TEST_SUITE(callback_print_log)

BOOST_AUTO_TEST_CASE(the_epoch_table_has_its_columns_and_a_row_per_epoch) {
  skein::testing::EngineRun run(
      skein::testing::small_run("callbacks", {{{"plugin", "print_log"}, {"columns", {"epoch", "train_loss"}}}}));
  run.fit();
  const std::string log = run.log_text();
  BOOST_TEST(skein::testing::contains(log, "train_loss"), log);
  BOOST_TEST(!skein::testing::contains(log, "valid_acc"), log);  // only the columns asked for
  const auto& h = run.rank(0).context().history();
  char second[32];
  std::snprintf(second, sizeof second, "%.4f", h.get(1, "train_loss").get<double>());
  BOOST_TEST(skein::testing::contains(log, second), log);  // precision 4
}

BOOST_AUTO_TEST_SUITE_END()
