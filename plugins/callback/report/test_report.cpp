#define BOOST_TEST_MODULE callback_report
#include <boost/test/unit_test.hpp>

#include "skein/io/input_file.hpp"
#include "skein/testing.hpp"

BOOST_AUTO_TEST_SUITE(callback_report)

BOOST_AUTO_TEST_CASE(a_self_contained_html_page_of_the_run) {
  skein::testing::EngineRun run(skein::testing::small_run("callbacks", {{{"plugin", "report"}}}));
  run.fit();
  const auto html = skein::read_whole_file(run.run_dir() + "/report.html");
  BOOST_TEST_REQUIRE(html.has_value());
  BOOST_TEST(skein::testing::contains(*html, "<html"));
  BOOST_TEST(skein::testing::contains(*html, "valid_loss"));
  BOOST_TEST(!skein::testing::contains(*html, "<script src="));  // nothing fetched from elsewhere
}

BOOST_AUTO_TEST_SUITE_END()
