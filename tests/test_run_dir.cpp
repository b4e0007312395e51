#define BOOST_TEST_MODULE run_dir
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdlib>

#include "skein/training/run/run_dir.hpp"
#include "skein/errors.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/run.hpp"
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

BOOST_AUTO_TEST_CASE(outputs_are_recorded_with_the_folders_that_hold_them) {
  test::TempDir tmp;
  const auto run = run_in(tmp.str("run"));
  skein::run_output_path(run, "logs/deep/metrics.jsonl", "test:");
  const auto recorded = skein::run_files::recorded_in_process();
  for (const std::string e : {"logs/", "logs/deep/", "logs/deep/metrics.jsonl"})
    BOOST_TEST((std::find(recorded.begin(), recorded.end(), e) != recorded.end()), e);
  BOOST_TEST(contains(output_error(run, "a\nb.txt"), "line break"));
}

BOOST_AUTO_TEST_CASE(no_follow_walks_never_pass_a_link) {
  namespace nf = skein::core::no_follow;
  test::TempDir tmp;
  fs::create_directories(tmp.str("outside"));
  test::write_text(tmp.str("outside/keep.txt"), "keep\n");
  fs::create_directories(tmp.str("root/real"));
  test::write_text(tmp.str("root/real/file"), "x\n");
  fs::create_symlink(tmp.str("outside"), tmp.str("root/link"));
  const nf::Dir root = nf::open_dir(tmp.str("root"));
  BOOST_TEST(!nf::remove(root, "link/keep.txt", true));
  BOOST_TEST(nf::remove(root, "link/", true));  // the link itself goes, not what it points to
  BOOST_TEST(fs::exists(tmp.str("outside/keep.txt")));
  BOOST_TEST(!nf::remove(root, "real", false));  // not empty: a container stays
  BOOST_TEST(nf::remove(root, "real", true));
  BOOST_TEST(!fs::exists(tmp.str("root/real")));
  BOOST_TEST(!nf::remove(root, "../outside/keep.txt", true));
  BOOST_TEST(fs::exists(tmp.str("outside/keep.txt")));
}

// The previous run is moved aside, not deleted, until the new one commits.
BOOST_AUTO_TEST_CASE(a_previous_run_is_set_aside_until_the_new_one_commits) {
  test::TempDir tmp;
  const std::string run = tmp.str("run");
  fs::create_directories(run + "/box");
  test::write_text(run + "/.skein-outputs", std::string(skein::run_files::kListHeader) +
                                                "\nconfig.json\nhistory.json\nbox/\nbox/old.txt\n");
  test::write_text(run + "/config.json", "old config\n");
  test::write_text(run + "/history.json", "[]\n");
  test::write_text(run + "/box/old.txt", "old output\n");
  test::write_text(run + "/box/mine.txt", "the user's\n");
  for (const bool commit : {false, true}) {
    skein::core::RunDirectory dir(run);
    dir.set_aside_previous_run();
    BOOST_TEST(dir.holds_previous_run());
    BOOST_TEST(!fs::exists(run + "/config.json"));
    BOOST_TEST(!fs::exists(run + "/box/old.txt"));
    BOOST_TEST(test::read_text(run + "/box/mine.txt") == "the user's\n");  // not skein's: stays put
    test::write_text(run + "/config.json", "new config\n");  // as a new run would
    if (commit) {
      dir.commit_new_run();
      BOOST_TEST(!fs::exists(run + "/.skein-previous"));
      BOOST_TEST(test::read_text(run + "/config.json") == "new config\n");
      BOOST_TEST(!fs::exists(run + "/box/old.txt"));
    } else {
      dir.discard_failed_start();
      BOOST_TEST(test::read_text(run + "/config.json") == "old config\n");
      BOOST_TEST(test::read_text(run + "/box/old.txt") == "old output\n");
      BOOST_TEST(!fs::exists(run + "/.skein-previous"));
    }
    BOOST_TEST(test::read_text(run + "/box/mine.txt") == "the user's\n");
  }
}
