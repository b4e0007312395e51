#define BOOST_TEST_MODULE run_dir
#include <boost/test/unit_test.hpp>

#include <cstdlib>

#include "skein/core/run_dir.hpp"
#include "skein/errors.hpp"
#include "skein/run_output.hpp"
#include "test_support.hpp"

// Where a run may write and what --overwrite may remove: the SDK's
// run_output_path and the core's RunDirectory, without training anything.

namespace fs = boost::filesystem;
using skein::ConfigError;
using test::contains;

namespace {

skein::RunInfo run_in(const std::string& dir) {
  skein::RunInfo run;
  run.run_dir = dir;
  return run;
}

std::string output_error(const skein::RunInfo& run, const std::string& name) {
  return test::message_of<ConfigError>([&] { skein::run_output_path(run, name, "test:"); });
}

struct OutsideAllowed {
  OutsideAllowed() { ::setenv("SKEIN_ALLOW_OUTSIDE_RUN_DIR", "1", 1); }
  ~OutsideAllowed() { ::unsetenv("SKEIN_ALLOW_OUTSIDE_RUN_DIR"); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(outputs_resolve_inside_the_run_directory) {
  test::TempDir tmp;
  const auto run = run_in(tmp.str("run"));
  BOOST_TEST(skein::run_output_path(run, "metrics.jsonl", "test:") == tmp.str("run") + "/metrics.jsonl");
  BOOST_TEST(skein::run_output_path(run, "tb/sub/../events", "test:") == tmp.str("run") + "/tb/events");
  BOOST_TEST(skein::is_run_output(run, "metrics.jsonl"));
  BOOST_TEST(skein::is_run_output(run, tmp.str("run") + "/tb/events/file"));
  BOOST_TEST(!skein::is_run_output(run, "other.txt"));
}

BOOST_AUTO_TEST_CASE(outputs_that_leave_the_run_directory_are_refused) {
  test::TempDir tmp;
  fs::create_directories(tmp.str("run"));
  const auto run = run_in(tmp.str("run"));
  for (const std::string name : {"/etc/passwd", "../escape.txt", "a/../../escape.txt", ".", "/"})
    BOOST_TEST(contains(output_error(run, name), "outside the run directory"), name);
  // A symlink inside the run directory that points out of it.
  fs::create_symlink(tmp.str(), tmp.str("run/link"));
  BOOST_TEST(contains(output_error(run, "link/escape.txt"), "outside the run directory"));
  BOOST_TEST(contains(output_error(run, ""), "is empty"));
}

BOOST_AUTO_TEST_CASE(the_runs_own_files_are_not_a_plugins_to_write) {
  test::TempDir tmp;
  const auto run = run_in(tmp.str("run"));
  for (const std::string name : {"config.json", "history.json", "train.log", "checkpoints/x", ".skein-outputs"})
    BOOST_TEST(contains(output_error(run, name), "the run's own"), name);
}

BOOST_AUTO_TEST_CASE(the_explicit_opt_in_allows_outside_paths) {
  test::TempDir tmp;
  OutsideAllowed allow;
  const auto run = run_in(tmp.str("run"));
  BOOST_TEST(skein::run_output_path(run, tmp.str("elsewhere.txt"), "test:") == tmp.str("elsewhere.txt"));
  // Still never the run's own files.
  BOOST_TEST(contains(output_error(run, "config.json"), "the run's own"));
}

BOOST_AUTO_TEST_CASE(directory_states) {
  using skein::core::RunDirState;
  using skein::core::run_dir_state;
  test::TempDir tmp;
  BOOST_TEST((run_dir_state(tmp.str("missing")) == RunDirState::fresh));
  fs::create_directories(tmp.str("empty"));
  BOOST_TEST((run_dir_state(tmp.str("empty")) == RunDirState::fresh));
  fs::create_directories(tmp.str("mine"));
  test::write_text(tmp.str("mine/notes.txt"), "the user's own file\n");
  BOOST_TEST((run_dir_state(tmp.str("mine")) == RunDirState::foreign));
  BOOST_TEST(contains(test::message_of<ConfigError>([&] { skein::core::check_run_dir_usable(tmp.str("mine"), true); }),
                      "holds no run written by skein"));
  // A config.json alone is not a skein run: --overwrite must not touch it.
  fs::create_directories(tmp.str("project"));
  test::write_text(tmp.str("project/config.json"), "{}\n");
  BOOST_TEST((run_dir_state(tmp.str("project")) == RunDirState::foreign));
  BOOST_TEST((run_dir_state("/") == RunDirState::foreign));
  // What a start killed before its first epoch left: skein's files only.
  fs::create_directories(tmp.str("killed"));
  test::write_text(tmp.str("killed/.skein-outputs"), "config.json\ntrain.log\n");
  test::write_text(tmp.str("killed/config.json"), "{}\n");
  test::write_text(tmp.str("killed/train.log"), "\n");
  BOOST_TEST((run_dir_state(tmp.str("killed")) == RunDirState::fresh));
  test::write_text(tmp.str("killed/history.json"), "[]\n");
  BOOST_TEST((run_dir_state(tmp.str("killed")) == RunDirState::holds_run));
}

BOOST_AUTO_TEST_CASE(a_second_holder_of_the_lock_is_refused) {
  test::TempDir tmp;
  skein::core::RunDirectory first(tmp.str("run"));
  const std::string err =
      test::message_of<ConfigError>([&] { skein::core::RunDirectory second(tmp.str("run")); });
  BOOST_TEST(contains(err, "is in use by another skein process (pid "), err);
}

BOOST_AUTO_TEST_CASE(a_failed_start_leaves_no_directory_behind) {
  test::TempDir tmp;
  {
    skein::core::RunDirectory dir(tmp.str("new"));
    BOOST_TEST(fs::exists(tmp.str("new")));
    dir.discard_failed_start();
  }
  BOOST_TEST(!fs::exists(tmp.str("new")));
}
