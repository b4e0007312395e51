#define BOOST_TEST_MODULE run_safety
#include <boost/test/unit_test.hpp>

#include <csignal>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "skein/io/atomic_file.hpp"
#include "skein/run.hpp"
#include "test_support.hpp"

// A user's runs and files are never lost or changed by skein: --overwrite
// replaces a run only once the new one has an epoch to show, files a user put
// into skein's directories stay, nothing is deleted or written through a
// symbolic link or a crafted list of outputs, and commands never write over a
// special file or a run's own files.

namespace fs = boost::filesystem;

namespace {

using test::contains;
const std::string kSkein = SKEIN_EXE;

struct Fixture {
  test::TempDir tmp;

  // `skein train --config NAME.json ARGS`, with the test plugins.
  test::CommandResult train(const std::string& config, const std::string& args) {
    return test::run(test::in_private_network(kSkein + " train --plugin-dir " TEST_PLUGIN_DIR " --config " +
                                              tmp.str(config + ".json") + " " + args));
  }
  void write_config(const std::string& name, const nlohmann::json& cfg) {
    test::write_text(tmp.str(name + ".json"), cfg.dump(2));
  }
  // A finished two-epoch run with checkpoints and TensorBoard files, in `name`.
  std::string finished_run(const std::string& name) {
    auto cfg = test::synthetic_config();
    cfg["max_epochs"] = 2;
    cfg["callbacks"] = {{{"plugin", "checkpoint"}}, {{"plugin", "tensorboard"}}, {{"plugin", "jsonl"}}};
    write_config(name, cfg);
    const auto r = train(name, "--run-dir " + tmp.str(name));
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return tmp.str(name);
  }
};

// Every file below `dir` with its content: what a run directory holds.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (fs::recursive_directory_iterator it(dir), end; it != end; ++it) {
    if (fs::is_symlink(it->symlink_status())) {
      files[fs::relative(it->path(), dir).string()] = "-> " + fs::read_symlink(it->path()).string();
      it.disable_recursion_pending();
    } else if (fs::is_regular_file(it->status()) && it->path().filename() != ".skein.lock") {
      files[fs::relative(it->path(), dir).string()] = test::read_text(it->path().string());
    }
  }
  return files;
}

std::size_t events_files(const std::string& dir) {
  std::size_t n = 0;
  for (fs::directory_iterator it(dir), end; it != end; ++it)
    if (it->path().filename().string().rfind("events.out.tfevents.", 0) == 0) ++n;
  return n;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(overwrite, Fixture)

// A new run that fails before its first epoch ends (at the first batch, in a
// callback, killed) leaves the run it was to replace as it was.
BOOST_AUTO_TEST_CASE(a_failed_overwrite_leaves_the_old_run_whole) {
  const std::string run = finished_run("precious");
  const auto before = snapshot(run);
  BOOST_REQUIRE(before.count("checkpoints/epoch_0002/model.pt"));
  // Fails at the start of epoch 1, after every plugin started.
  auto r = train("precious", "--run-dir " + run + " --overwrite --plugin probe_callback:fail_at=1");
  BOOST_TEST(r.exit_code != 0, r.err);
  BOOST_TEST(snapshot(run) == before);
  // Fails in the middle of epoch 1, after a batch was trained.
  r = train("precious", "--run-dir " + run + " --overwrite --plugin probe_callback:fail_mid=1");
  BOOST_TEST(r.exit_code != 0, r.err);
  BOOST_TEST(snapshot(run) == before);
  BOOST_TEST(!fs::exists(run + "/.skein-previous"));
}

// A start whose first batch fails (a model of the wrong output width, a
// loss that does not fit the targets, here a callback) is a failed start: it
// leaves nothing behind, as one that fails before training. From the second
// batch on, the run is kept with its train.log.
BOOST_AUTO_TEST_CASE(a_run_failing_in_its_first_batch_leaves_nothing_behind) {
  write_config("first", test::synthetic_config());
  auto r = train("first", "--run-dir " + tmp.str("first-run") + " --plugin probe_callback:fail_first=1");
  BOOST_TEST(r.exit_code != 0, r.err);
  BOOST_TEST(contains(r.err, "probe failure at the first batch"), r.err);
  BOOST_TEST(!fs::exists(tmp.str("first-run")));
  r = train("first", "--run-dir " + tmp.str("second-run") + " --plugin probe_callback:fail_mid=1");
  BOOST_TEST(r.exit_code != 0, r.err);
  // Kept, as it trained a batch; its log ends with the error.
  BOOST_TEST(contains(test::read_text(tmp.str("second-run/train.log")), "skein: error: probe failure mid-epoch"));
}

// Killed (SIGKILL) before its first epoch ends, the new run cannot restore
// anything itself: the next skein process that takes the directory does.
// Stopped by SIGTERM (or Ctrl-C), it brings the old run back itself.
BOOST_AUTO_TEST_CASE(an_overwrite_stopped_in_its_first_epoch_brings_the_old_run_back) {
  const std::string run = finished_run("precious");
  const auto before = snapshot(run);
  auto r = train("precious", "--run-dir " + run + " --overwrite --plugin probe_callback:signal_at=1,signal=9");
  BOOST_TEST(r.exit_code != 0, r.err);
  BOOST_TEST(fs::exists(run + "/.skein-previous"));
  // Without --overwrite: refused, as the old run is back.
  r = train("precious", "--run-dir " + run);
  BOOST_TEST(r.exit_code == 2, r.err);
  BOOST_TEST(contains(r.err, "already holds a run"), r.err);
  BOOST_TEST(contains(r.err, "is brought back"), r.err);
  const auto after = snapshot(run);
  for (const std::string f : {"history.json", "config.json", "checkpoints/epoch_0002/model.pt", "metrics.jsonl"})
    BOOST_TEST((after.count(f) && after.at(f) == before.at(f)), f);

  r = train("precious", "--run-dir " + run + " --overwrite --plugin probe_callback:signal_at=1,signal=15");
  BOOST_TEST(r.exit_code == 128 + 15, r.err);
  BOOST_TEST(contains(r.err, "interrupted by SIGTERM"), r.err);
  BOOST_TEST(!fs::exists(run + "/.skein-previous"));
  BOOST_TEST((snapshot(run) == before));
  // A resume continues the old run.
  r = test::run(test::in_private_network(kSkein + " train --resume " + run + " --set max_epochs=2"));
  BOOST_TEST(r.exit_code == 0, r.err);
}

// Once the new run has a complete checkpoint it is the run: an --overwrite
// killed (or stopped) in its first epoch after writing step checkpoints is
// what --resume continues, with its own config; the run it replaced is gone.
BOOST_AUTO_TEST_CASE(an_overwrite_with_a_complete_checkpoint_is_the_run) {
  for (const int signal : {SIGKILL, SIGTERM}) {
    const std::string run = finished_run(signal == SIGKILL ? "old-killed" : "old-stopped");
    auto cfg = test::synthetic_config();  // 12 batches an epoch
    cfg["optimizer"]["lr"] = 0.2;
    cfg["max_epochs"] = 1;
    cfg["callbacks"] = {{{"plugin", "checkpoint"}, {"every_n_steps", 2}},
                        {{"plugin", "probe_callback"}, {"signal_at", 1}, {"signal_batch", 5}, {"signal", signal}}};
    write_config("newer", cfg);
    auto r = train("newer", "--run-dir " + run + " --overwrite");
    BOOST_TEST(r.exit_code != 0, r.err);
    bool step_checkpoint = false;  // the checkpoint callback keeps the newest
    for (fs::directory_iterator it(run + "/checkpoints"), end; it != end; ++it)
      step_checkpoint = step_checkpoint || (it->path().filename().string().rfind("step_", 0) == 0 &&
                                            fs::is_regular_file(it->path() / "trainer.json"));
    BOOST_REQUIRE_MESSAGE(step_checkpoint, r.err);
    r = test::run(test::in_private_network(kSkein + " train --plugin-dir " TEST_PLUGIN_DIR " --resume " + run +
                                           " --set callbacks.1.signal_at=0"));
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(contains(r.out, "Resumed from " + run + "/checkpoints/step_0000000"), r.out);
    BOOST_TEST(test::load_json(run + "/config.json")["optimizer"]["lr"].get<double>() == 0.2);
    BOOST_TEST(test::load_json(run + "/history.json").size() == 1u);
    BOOST_TEST(!fs::exists(run + "/.skein-previous"));
    BOOST_TEST(!fs::exists(run + "/checkpoints/epoch_0002"));  // the replaced run's
    BOOST_TEST(!fs::exists(run + "/metrics.jsonl"));
  }
}

BOOST_AUTO_TEST_CASE(a_successful_overwrite_replaces_only_what_skein_wrote) {
  const std::string run = finished_run("precious");
  BOOST_REQUIRE(fs::is_directory(run + "/tensorboard"));
  test::write_text(run + "/tensorboard/mine.txt", "the user's notes\n");
  test::write_text(run + "/checkpoints/NOTES.txt", "which checkpoint is good\n");
  const std::string old_model = test::read_text(run + "/checkpoints/epoch_0002/model.pt");
  auto cfg = test::synthetic_config();
  cfg["max_epochs"] = 1;
  cfg["seed"] = 11;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}, {{"plugin", "tensorboard"}}};
  write_config("newer", cfg);
  const auto r = train("newer", "--run-dir " + run + " --overwrite");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(test::read_text(run + "/tensorboard/mine.txt") == "the user's notes\n");
  BOOST_TEST(test::read_text(run + "/checkpoints/NOTES.txt") == "which checkpoint is good\n");
  BOOST_TEST(events_files(run + "/tensorboard") == 1u);  // the old run's went
  BOOST_TEST(!fs::exists(run + "/checkpoints/epoch_0002"));
  BOOST_TEST(!fs::exists(run + "/metrics.jsonl"));  // the new config has no jsonl
  BOOST_TEST(fs::exists(run + "/checkpoints/epoch_0001/model.pt"));
  BOOST_TEST(!fs::exists(run + "/.skein-previous"));
  BOOST_TEST(!fs::exists(run + "/.skein-discarded"));
  BOOST_TEST(test::read_text(run + "/checkpoints/epoch_0001/model.pt") != old_model);
}

// Plugins write as they start (csv_classes.json): a failed --overwrite must
// not have changed the old run's files, even those the new run also writes.
BOOST_AUTO_TEST_CASE(a_failed_overwrite_changes_no_file_of_the_old_run) {
  test::write_text(tmp.str("pets.csv"), "a,b,label\n1,2,cat\n2,1,dog\n1,1,cat\n2,2,dog\n3,1,cat\n1,3,dog\n"
                                        "0,2,cat\n2,0,dog\n");
  test::write_text(tmp.str("bugs.csv"), "a,b,label\n1,2,ant\n2,1,bee\n1,1,ant\n2,2,bee\n3,1,ant\n1,3,bee\n"
                                        "0,2,ant\n2,0,bee\n");
  auto cfg = test::synthetic_config();
  cfg["data"] = {{"plugin", "csv"}, {"train", tmp.str("pets.csv")}};
  cfg["batch_size"] = 2;
  cfg["max_epochs"] = 1;
  write_config("pets", cfg);
  const std::string run = tmp.str("pets-run");
  auto r = train("pets", "--run-dir " + run);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto before = snapshot(run);
  BOOST_REQUIRE(contains(before.at("csv_classes.json"), "cat"));
  r = train("pets", "--run-dir " + run + " --overwrite --set data.train=" + tmp.str("bugs.csv") +
                        " --plugin probe_callback:no_such_option=1");
  BOOST_TEST(r.exit_code == 2, r.err);
  BOOST_TEST(snapshot(run) == before);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(links_and_crafted_lists, Fixture)

BOOST_AUTO_TEST_CASE(the_lock_is_never_taken_through_a_link) {
  test::write_text(tmp.str("victim.txt"), "precious\n");
  fs::create_directories(tmp.str("run"));
  fs::create_symlink(tmp.str("victim.txt"), tmp.str("run/.skein.lock"));
  write_config("tiny", test::synthetic_config());
  const auto r = train("tiny", "--run-dir " + tmp.str("run"));
  BOOST_TEST(r.exit_code == 2, r.err);
  BOOST_TEST(test::one_error_line(r), r.err);
  BOOST_TEST(contains(r.err, "symbolic link"), r.err);
  BOOST_TEST(test::read_text(tmp.str("victim.txt")) == "precious\n");
}

// A list of outputs naming entries through symlinked folders: nothing
// outside the run directory is deleted, with or without --overwrite.
BOOST_AUTO_TEST_CASE(a_crafted_output_list_deletes_nothing_outside_the_run) {
  for (const bool overwrite : {false, true}) {
    const std::string outside = tmp.str(overwrite ? "outside-o" : "outside");
    fs::create_directories(outside + "/deep");
    test::write_text(outside + "/important.txt", "keep\n");
    test::write_text(outside + "/deep/x", "keep\n");
    const std::string run = overwrite ? finished_run("held") : tmp.str("residue");
    fs::create_directories(run + "/sub");
    fs::create_symlink(outside, run + "/link");
    fs::create_symlink(outside + "/deep", run + "/sub/deep");
    std::string list = overwrite ? test::read_text(run + "/.skein-outputs") : "config.json\n";
    list += "link/important.txt\nsub/deep/x\nlink/\nsub/deep/\n";
    test::write_text(run + "/.skein-outputs", list);
    if (!overwrite) test::write_text(run + "/config.json", "{}\n");
    write_config("tiny", test::synthetic_config());
    train("tiny", "--run-dir " + run + (overwrite ? " --overwrite" : ""));
    BOOST_TEST(test::read_text(outside + "/important.txt") == "keep\n", overwrite);
    BOOST_TEST(test::read_text(outside + "/deep/x") == "keep\n", overwrite);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(command_outputs, Fixture)

// A FIFO or device named as an output is written, never replaced by a file;
// a directory is refused.
BOOST_AUTO_TEST_CASE(atomic_writes_never_replace_special_files) {
  const std::string fifo = tmp.str("pipe");
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Nobody reads: an error, not a hang.
  auto err = test::message_of<std::runtime_error>([&] { skein::write_file_atomic(fifo, "abc"); });
  BOOST_TEST(contains(err, "a FIFO that nobody reads"), err);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  BOOST_REQUIRE(reader >= 0);
  skein::write_file_atomic(fifo, "abc");
  char got[8] = {};
  BOOST_TEST(::read(reader, got, sizeof got) == 3);
  ::close(reader);
  BOOST_TEST(std::string(got) == "abc");
  struct stat st {};
  BOOST_TEST((::lstat(fifo.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)));
  fs::create_directories(tmp.str("adir"));
  err = test::message_of<std::runtime_error>([&] { skein::write_file_atomic(tmp.str("adir"), "abc"); });
  BOOST_TEST(contains(err, "is a directory"), err);
  // A planted link in place of a run file is refused by open_no_follow.
  fs::create_symlink(tmp.str("target"), tmp.str("link"));
  err = test::message_of<std::runtime_error>([&] { skein::open_no_follow(tmp.str("link"), O_WRONLY | O_CREAT); });
  BOOST_TEST(contains(err, "symbolic link"), err);
  BOOST_TEST(!fs::exists(tmp.str("target")));
}

BOOST_AUTO_TEST_CASE(export_writes_to_stdout_in_place_and_never_over_a_runs_files) {
  const std::string run = finished_run("done");
  // /dev/stdout is this process's stdout, whatever it is (a file here, or a
  // pipe): the model's bytes go there, and /dev/stdout stays what it was.
  struct stat before_st {};
  BOOST_REQUIRE(::lstat("/dev/stdout", &before_st) == 0);
  auto r = test::run("sh -c '" + kSkein + " export " + run + " --format state_dict --out /dev/stdout > " +
                     tmp.str("out.pt") + "'");
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(test::read_text(tmp.str("out.pt")).size() > 1000u);
  r = test::run("sh -c '" + kSkein + " export " + run + " --format state_dict --out /dev/stdout | wc -c'");
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(std::stol(r.out) > 1000);
  struct stat st {};
  BOOST_TEST((::lstat("/dev/stdout", &st) == 0 && st.st_mode == before_st.st_mode && st.st_ino == before_st.st_ino));
  const auto before = snapshot(run);
  for (const std::string own : {"config.json", "history.json", "checkpoints/epoch_0002/model.pt", "train.log"}) {
    r = test::run(kSkein + " export " + run + " --format state_dict --out " + run + "/" + own);
    BOOST_TEST(r.exit_code == 2, own << ": " << r.err);
    BOOST_TEST(test::one_error_line(r), r.err);
    BOOST_TEST(contains(r.err, "the run's own"), r.err);
  }
  BOOST_TEST(snapshot(run) == before);
  // Resume still accepts the checkpoint.
  r = test::run(test::in_private_network(kSkein + " train --resume " + run + " --set max_epochs=3"));
  BOOST_TEST(r.exit_code == 0, r.err);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(endings, Fixture)

// Every run that ends leaves its final model: export and predict work on a
// run without the checkpoint callback.
BOOST_AUTO_TEST_CASE(a_finished_run_keeps_its_final_model) {
  auto cfg = test::synthetic_config();
  cfg["max_epochs"] = 2;
  write_config("plain", cfg);
  const std::string run = tmp.str("plain");
  auto r = train("plain", "--run-dir " + run);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(test::load_json(run + "/checkpoints/final/trainer.json")["epoch"].get<int>() == 2);
  BOOST_TEST(!fs::exists(run + "/checkpoints/final/optimizer.pt"));  // a model, not a state to resume
  r = test::run(kSkein + " export " + run + " --format state_dict --out " + tmp.str("sd.pt"));
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(fs::file_size(tmp.str("sd.pt")) > 0u);
  r = test::run(kSkein + " train --resume " + run);
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(contains(r.err, "no complete checkpoint"), r.err);
}

// Ctrl-C on one process: the run stops at the next batch, keeps the model of
// its last complete epoch, says where and how to continue, exits 130.
BOOST_AUTO_TEST_CASE(ctrl_c_keeps_the_last_complete_epoch_and_says_how_to_continue) {
  auto cfg = test::synthetic_config();
  cfg["max_epochs"] = 4;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}},
                      {{"plugin", "progress_bar"}},
                      {{"plugin", "probe_callback"}, {"signal_at", 3}, {"signal", SIGINT}}};
  write_config("interrupted", cfg);
  const std::string run = tmp.str("interrupted");
  auto r = train("interrupted", "--run-dir " + run);
  BOOST_TEST(r.exit_code == 128 + SIGINT, r.err);
  BOOST_TEST(test::one_error_line(r), r.err);
  BOOST_TEST(contains(r.err, "skein: error: interrupted by SIGINT at epoch 3, batch 3; the model of epoch 2 is in " +
                                 run + "/checkpoints/final; continue with: skein train --resume " + run),
             r.err);
  BOOST_TEST(test::read_text(run + "/checkpoints/final/model_state_dict.pt") ==
             test::read_text(run + "/checkpoints/epoch_0002/model_state_dict.pt"));
  BOOST_TEST(contains(test::read_text(run + "/train.log"), "skein: error: interrupted by SIGINT"));
  BOOST_TEST(test::load_json(run + "/history.json").size() == 2u);
  r = test::run(test::in_private_network(kSkein + " train --plugin-dir " TEST_PLUGIN_DIR " --resume " + run +
                                         " --set callbacks.2.signal_at=0"));
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(test::load_json(run + "/checkpoints/final/trainer.json")["epoch"].get<int>() == 4);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(messages, Fixture)

// A name holding a line break is shown escaped, on the one error line.
BOOST_AUTO_TEST_CASE(names_with_line_breaks_stay_on_one_line) {
  const auto r = test::run(kSkein + " train --config '" + tmp.str("a\nb.json") + "'");
  BOOST_TEST(r.exit_code == 2, r.err);
  BOOST_TEST(test::one_error_line(r), r.err);
  BOOST_TEST(contains(r.err, "a\\nb.json"), r.err);
}

// A --plugin-dir the user named but skein refuses is said, even when a
// plugin of the same name is found elsewhere.
BOOST_AUTO_TEST_CASE(a_refused_plugin_directory_is_reported) {
  const std::string dir = tmp.str("shared-plugins");
  fs::create_directories(dir);
  fs::copy_file(fs::path(SKEIN_PLUGIN_DIR) / "libskein_callback_jsonl.so", fs::path(dir) / "libskein_callback_jsonl.so");
  fs::permissions(dir, fs::perms::all_all);
  auto cfg = test::synthetic_config();
  cfg["max_epochs"] = 1;
  cfg["callbacks"] = {{{"plugin", "jsonl"}}};
  write_config("tiny", cfg);
  const auto r = test::run(test::in_private_network(kSkein + " train --plugin-dir " + dir + " --config " +
                                                    tmp.str("tiny.json") + " --run-dir " + tmp.str("run")));
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.err, "--plugin-dir: refused plugin directory '" + dir + "'"), r.err);
  BOOST_TEST(contains(r.err, "world-writable"), r.err);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(checkpoint_inputs, Fixture)

// A checkpoint file that is not a regular file (a link to /dev/zero or
// /dev/urandom, a FIFO) is refused in one line before anything opens it:
// reading one would never end, opening a FIFO waits for a writer.
BOOST_AUTO_TEST_CASE(checkpoint_files_that_are_not_regular_files_are_refused) {
  const std::string run = finished_run("done");
  struct Case {
    std::string file;  // under checkpoints/
    std::string plant;  // a device to link to, or "fifo"
    std::string kind;
  };
  const std::vector<Case> cases{{"epoch_0002/model.pt", "/dev/zero", "a character device"},
                                {"epoch_0002/optimizer.pt", "/dev/urandom", "a character device"},
                                {"epoch_0002/rng.pt", "fifo", "a FIFO"},
                                {"epoch_0002/history.json", "fifo", "a FIFO"},
                                {"final/model_state_dict.pt", "/dev/zero", "a character device"},
                                {"epoch_0002/trainer.json", "fifo", "a FIFO"}};
  int n = 0;
  for (const Case& c : cases) {
    const std::string copy = tmp.str("copy" + std::to_string(n++));
    BOOST_REQUIRE(test::run("cp -a " + run + " " + copy).exit_code == 0);
    const std::string file = copy + "/checkpoints/" + c.file;
    fs::remove(file);
    if (c.plant == "fifo")
      BOOST_REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
    else
      fs::create_symlink(c.plant, file);
    // Bounded here: before the fix each of these read or waited for ever.
    const bool exports = c.file.rfind("final/", 0) == 0;
    const auto r = exports ? test::run(kSkein + " export " + copy + " --format state_dict --out " +
                                           tmp.str("out.pt"), 60)
                           : test::run(test::in_private_network(kSkein + " train --resume " + copy +
                                                                " --set max_epochs=3"), 60);
    BOOST_TEST(r.exit_code == 2, c.file << ": " << r.err);
    BOOST_TEST(test::one_error_line(r), c.file << ": " << r.err);
    BOOST_TEST(contains(r.err, "'" + file + "' is not a regular file (" + c.kind + ")"), c.file << ": " << r.err);
    if (c.file == "epoch_0002/trainer.json")  // not a checkpoint then, and none other to resume
      BOOST_TEST(contains(r.err, "no complete checkpoint"), r.err);
  }
}

BOOST_AUTO_TEST_SUITE_END()
