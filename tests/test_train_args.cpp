#define BOOST_TEST_MODULE train_args
#include <boost/test/unit_test.hpp>

#include "command_options.hpp"

// train_request_args is how a launcher hands `skein train`'s request to its
// workers: what it writes must parse back into the same request, field by field.

using skein::core::TrainRequest;
using skein::launcher::TrainArgs;

namespace {

TrainArgs parsed_from(const TrainRequest& req) {
  TrainArgs out;
  BOOST_REQUIRE(skein::launcher::parse_train_args(skein::launcher::train_request_args(req), out));
  return out;
}

void check_round_trip(const TrainRequest& req) {
  const TrainArgs back = parsed_from(req);
  const TrainRequest& got = back.request;
  BOOST_TEST(got.sources.config_path == req.sources.config_path);
  BOOST_TEST(got.sources.plugins == req.sources.plugins, boost::test_tools::per_element());
  BOOST_TEST(got.sources.sets == req.sources.sets, boost::test_tools::per_element());
  BOOST_TEST(got.run_dir == req.run_dir);
  BOOST_TEST(got.resume_dir == req.resume_dir);
  BOOST_TEST(got.overwrite == req.overwrite);
  BOOST_TEST(got.plugin_dirs == req.plugin_dirs, boost::test_tools::per_element());
  // A worker's arguments never ask it to start workers of its own.
  BOOST_TEST(!back.distributed);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_fresh_run_parses_back_into_the_same_request) {
  TrainRequest req;
  req.sources.config_path = "configs/mnist.json";
  req.sources.plugins = {"early_stopping:patience=2,monitor=valid_acc", "/tmp/my plugins/libx.so"};
  req.sources.sets = {"optimizer.lr=-0.5", "model.hidden=[64, 32]", "data.task=\"a b\""};
  req.run_dir = "-runs/odd name";  // a value that looks like a flag stays a value
  req.overwrite = true;
  req.plugin_dirs = {"/opt/skein/plugins", "build/plugins"};
  check_round_trip(req);
}

BOOST_AUTO_TEST_CASE(a_resumed_run_parses_back_into_the_same_request) {
  TrainRequest req;
  req.resume_dir = "runs/mnist-1";
  req.sources.sets = {"max_epochs=20"};
  check_round_trip(req);
}

BOOST_AUTO_TEST_CASE(an_empty_request_gives_no_arguments) {
  BOOST_TEST(skein::launcher::train_request_args(TrainRequest{}).empty());
  check_round_trip(TrainRequest{});
}
