#define BOOST_TEST_MODULE callback_tensorboard
#include <boost/test/unit_test.hpp>

#include <boost/filesystem.hpp>

#include "skein/testing.hpp"

BOOST_AUTO_TEST_SUITE(callback_tensorboard)

BOOST_AUTO_TEST_CASE(one_event_file_that_grows_with_the_epochs) {
  skein::testing::EngineRun run(skein::testing::small_run("callbacks", {{{"plugin", "tensorboard"}}}));
  run.fit();
  std::vector<boost::filesystem::path> files;
  for (boost::filesystem::directory_iterator it(run.run_dir() + "/tensorboard"), end; it != end; ++it)
    files.push_back(it->path());
  BOOST_TEST_REQUIRE(files.size() == 1u);
  BOOST_TEST(files[0].filename().string().rfind("events.out.tfevents.", 0) == 0u);
  BOOST_TEST(boost::filesystem::file_size(files[0]) > 100u);
}

BOOST_AUTO_TEST_SUITE_END()
