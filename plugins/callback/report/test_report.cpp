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

// A page of epoch 1 stays until min_interval_s has passed; training's end
// rewrites it whatever the interval.
BOOST_AUTO_TEST_CASE(epoch_ends_rewrite_it_at_most_once_every_min_interval_s) {
  skein::testing::CallbackFixture fixture;
  const std::string page = fixture.harness.run().run_dir + "/report.html";
  auto shown_epoch = [&] {
    const auto html = skein::read_whole_file(page);
    return html && skein::testing::contains(*html, ": epoch 2 of") ? 2 : html ? 1 : 0;
  };
  for (const double interval : {3600.0, 0.0}) {
    auto report = fixture.make("report", {{"min_interval_s", interval}});
    auto& reporter = dynamic_cast<skein::EpochReporter&>(*report);
    skein::testing::FakeRun run(fixture.harness, {.config = {{"max_epochs", 3}}});
    run.epoch_with("train_loss", 1.0);
    reporter.on_epoch_recorded(run);
    BOOST_TEST(shown_epoch() == 1);
    run.epoch_with("train_loss", 0.5);
    reporter.on_epoch_recorded(run);
    BOOST_TEST(shown_epoch() == (interval > 0 ? 1 : 2), "min_interval_s " << interval);
    report->on_train_end(run);
    BOOST_TEST(shown_epoch() == 2);
  }
}

BOOST_AUTO_TEST_SUITE_END()
