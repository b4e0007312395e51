#define BOOST_TEST_MODULE session
#include <boost/test/unit_test.hpp>

#include <dlfcn.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <map>
#include <sstream>

#include <torch/torch.h>

#include "skein/session.hpp"
#include "skein/skein.h"
#include "test_support.hpp"

// skein::Session and the C ABI over it: the same training as skein train
// (bit for bit, 1 and 2 processes), checkpoints the CLI resumes and
// exports, and every bad argument of the C ABI a status with a message.

namespace {

using test::contains;
using test::load_json;
const std::string kSkein = SKEIN_EXE;
const std::string kReplay = SESSION_REPLAY_EXE;

nlohmann::json replay_config() {
  auto cfg = test::synthetic_config();
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}, {{"plugin", "early_stopping"}, {"patience", 5}}};
  return cfg;
}

// A session without data: the model sized by data_info.
nlohmann::json fed_config() {
  auto cfg = nlohmann::json::parse(R"({
    "model": {"plugin": "mlp", "hidden": [8]},
    "data_info": {"input_shape": [3], "num_classes": 2},
    "loss": {"plugin": "mse"},
    "seed": 3,
    "callbacks": []
  })");
  return cfg;
}

void expect_same_run(const std::string& cli, const std::string& session, const std::string& checkpoint) {
  BOOST_TEST(test::comparable_history(load_json(cli + "/history.json")) ==
             test::comparable_history(load_json(session + "/history.json")));
  const std::string a = test::read_text(cli + "/checkpoints/" + checkpoint + "/model.pt");
  BOOST_TEST(!a.empty());
  BOOST_TEST((a == test::read_text(session + "/checkpoints/" + checkpoint + "/model.pt")),
             "model.pt of " << checkpoint << " differs");
}

struct Fixture : test::Workspace {
  test::CommandResult cli(const std::string& config, const std::string& run_dir, const std::string& more = "") {
    return test::run(test::in_private_network(kSkein + " train --config " + config + " --run-dir " + run_dir + " " + more));
  }
};

// How often each file of a directory is opened while it is watched (inotify).
class OpenCounter {
 public:
  explicit OpenCounter(const std::string& dir) : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    BOOST_TEST_REQUIRE(fd_ >= 0);
    BOOST_TEST_REQUIRE(::inotify_add_watch(fd_, dir.c_str(), IN_OPEN) >= 0);
  }
  ~OpenCounter() { ::close(fd_); }
  OpenCounter(const OpenCounter&) = delete;
  OpenCounter& operator=(const OpenCounter&) = delete;
  // The opens since the watch began, by file name (queued as they happen).
  std::map<std::string, int> opens() {
    alignas(inotify_event) char events[1 << 16];
    for (ssize_t n; (n = ::read(fd_, events, sizeof events)) > 0;) {
      for (const char* at = events; at < events + n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(at);
        if (event->len > 0) ++opens_[event->name];
        at += sizeof(inotify_event) + event->len;
      }
    }
    return opens_;
  }

 private:
  int fd_;
  std::map<std::string, int> opens_;
};

// A C-side view of a float buffer.
skein_tensor view(float* data, int rank, const int64_t* shape, skein_layout layout = SKEIN_ROW_MAJOR) {
  return skein_tensor{data, rank, shape, SKEIN_FLOAT32, static_cast<std::int32_t>(layout), SKEIN_DEVICE_HOST, 0};
}

std::string options_for(const std::string& run_dir) {
  return nlohmann::json({{"run_dir", run_dir}, {"echo_log", false}}).dump();
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(session, Fixture)

BOOST_AUTO_TEST_CASE(a_session_fed_skein_trains_batches_ends_bit_identical_on_one_process) {
  const std::string config = write_config(replay_config());
  auto a = cli(config, dir("cli"));
  BOOST_TEST_REQUIRE(a.exit_code == 0, a.err);
  auto b = test::run(kReplay + " " + config + " " + dir("session"));
  BOOST_TEST_REQUIRE(b.exit_code == 0, b.err);
  expect_same_run(dir("cli"), dir("session"), "epoch_0003");
  BOOST_TEST(load_json(dir("session") + "/history.json").size() == 3u);
}

BOOST_AUTO_TEST_CASE(a_session_fed_skein_trains_batches_ends_bit_identical_on_two_processes) {
  auto cfg = replay_config();
  cfg["parallel"] = {{"plugin", "ddp"}};
  cfg["history"] = {{"plugin", "tcpstore"}};
  const std::string config = write_config(cfg);
  auto a = cli(config, dir("cli2"), "--nproc-per-node 2 --timeout 60");
  BOOST_TEST_REQUIRE(a.exit_code == 0, a.err);
  const std::string torchrun = "env SKEIN_TIMEOUT_S=60 " SKEIN_TEST_PYTHON
                               " -m torch.distributed.run --nproc_per_node 2 -r 2 -t 2 --master_addr 127.0.0.1 --master_port " +
                               std::to_string(test::free_port()) + " --no_python ";
  auto b = test::run(test::in_private_network(torchrun + kReplay + " " + config + " " + dir("session2")), 300);
  BOOST_TEST_REQUIRE(b.exit_code == 0, b.err);
  expect_same_run(dir("cli2"), dir("session2"), "epoch_0003");
}

// A run a session started continues under skein train --resume, and exports.
BOOST_AUTO_TEST_CASE(a_session_checkpoint_resumes_under_skein_train_and_exports) {
  auto cfg = replay_config();
  const std::string full = write_config(cfg);
  cfg["max_epochs"] = 2;
  const std::string short_run = write_config(cfg);
  auto a = cli(full, dir("straight"));
  BOOST_TEST_REQUIRE(a.exit_code == 0, a.err);
  auto b = test::run(kReplay + " " + short_run + " " + dir("embedded"));
  BOOST_TEST_REQUIRE(b.exit_code == 0, b.err);
  auto r = test::run(kSkein + " train --resume " + dir("embedded") + " --set max_epochs=3");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  expect_same_run(dir("straight"), dir("embedded"), "epoch_0003");
  auto e = test::run(kSkein + " export " + dir("embedded") + " --format state_dict --out " + dir("model.pt"));
  BOOST_TEST(e.exit_code == 0, e.err);
  BOOST_TEST(boost::filesystem::file_size(dir("model.pt")) > 0u);
}

// And the other way: a session resumes what skein train wrote.
BOOST_AUTO_TEST_CASE(a_session_resumes_a_skein_train_run) {
  auto cfg = replay_config();
  cfg["max_epochs"] = 2;
  const std::string config = write_config(cfg);
  auto a = cli(config, dir("cli"));
  BOOST_TEST_REQUIRE(a.exit_code == 0, a.err);
  skein::SessionOptions options;
  options.resume = dir("cli");
  options.echo_log = false;
  skein::Session s(nullptr, options);
  BOOST_TEST(s.epoch() == 2);
  BOOST_TEST(s.history().size() == 2u);
  s.train_step(torch::randn({4, 16}), torch::tensor({0, 1, 2, 3}));
  s.eval_step(torch::randn({4, 16}), torch::tensor({0, 1, 2, 3}));  // checkpoint's monitor: valid_loss
  BOOST_TEST(!s.end_epoch());
  BOOST_TEST(s.epoch() == 3);
}

// A session resumes from its own save_checkpoint too, not only from the
// checkpoint callback's epoch_*: the newest complete one of either kind.
BOOST_AUTO_TEST_CASE(a_session_resumes_from_the_newest_checkpoint_of_either_kind) {
  namespace fs = boost::filesystem;
  auto cfg = fed_config();
  cfg["callbacks"] = {{{"plugin", "checkpoint"}, {"every", 2}, {"keep_last", 5}}};  // epoch_0002, epoch_0004
  const auto x = torch::randn({8, 3}), y = torch::randn({8, 2});
  skein::SessionOptions options;
  options.echo_log = false;
  options.run_dir = dir("both");
  {
    skein::Session s(cfg, options);
    s.train_step(x, y), s.end_epoch();
    s.save_checkpoint("early");  // epoch 1
    s.train_step(x, y), s.end_epoch();
    s.train_step(x, y), s.end_epoch();
    s.save_checkpoint("late");  // epoch 3
    s.finish();
  }
  BOOST_TEST_REQUIRE(fs::is_directory(dir("both") + "/checkpoints/epoch_0002"));
  skein::SessionOptions resume;
  resume.echo_log = false;
  resume.resume = dir("both");
  {
    skein::Session s(nullptr, resume);  // the session's "late" beats the callback's epoch_0002
    BOOST_TEST(s.epoch() == 3);
    s.train_step(x, y);
    BOOST_TEST(!s.end_epoch());
    BOOST_TEST(s.epoch() == 4);
  }
  fs::remove_all(dir("both") + "/checkpoints/late");
  fs::remove_all(dir("both") + "/checkpoints/epoch_0004");
  {
    skein::Session s(nlohmann::json::object(), resume);  // "{}" as well as null
    BOOST_TEST(s.epoch() == 2);  // epoch_0002 beats the session's older "early"
  }
  // Only a session's checkpoints, no callback: resumable too.
  auto plain = fed_config();
  options.run_dir = dir("own");
  {
    skein::Session s(plain, options);
    s.train_step(x, y), s.end_epoch();
    s.save_checkpoint("mine");
  }
  resume.resume = dir("own");
  skein::Session s(nullptr, resume);
  BOOST_TEST(s.epoch() == 1);
}

// A classification loss (cross_entropy, the default) given a regression's
// targets: one line naming the loss in force and the fix.
BOOST_AUTO_TEST_CASE(regression_targets_under_the_default_loss_name_it_and_suggest_mse) {
  auto cfg = fed_config();
  cfg.erase("loss");
  skein::SessionOptions options;
  options.echo_log = false;
  options.run_dir = dir("no-loss");
  skein::Session s(cfg, options);
  const auto x = torch::randn({4, 3});
  for (const auto& y : {torch::randn({4, 2}), torch::randn({4, 2}).to(torch::kDouble),
                        torch::full({4, 2}, 0.25), torch::ones({4, 2}, torch::kLong)}) {
    const std::string message = test::message_of([&] { s.train_step(x, y); });
    BOOST_TEST(contains(message, "the loss in force is 'cross_entropy' (the default when the config names no \"loss\")"),
               message);
    BOOST_TEST(contains(message, "for a regression set \"loss\": {\"plugin\": \"mse\"}"), message);
    BOOST_TEST(message.find('\n') == std::string::npos, message);
    BOOST_TEST(!contains(message, "dataset"), message);  // a session has none: the caller's tensor is wrong
  }
  // Class ids, one out of range: bad data, not a regression.
  const std::string ids = test::message_of([&] { s.train_step(x, torch::tensor({0, 1, 2, 1})); });
  BOOST_TEST(contains(ids, "outside [0, 2)"), ids);
  BOOST_TEST(!contains(ids, "mse"), ids);
  // Through the C ABI: the same line.
  skein_session* c = nullptr;
  BOOST_TEST_REQUIRE(skein_session_create(cfg.dump().c_str(), options_for(dir("no-loss-c")).c_str(), &c) == SKEIN_OK,
                     skein_last_error(nullptr));
  float xs[4][3] = {}, ys[4][2] = {{0.5f, 1}, {2, 3}, {0, 0}, {1, 1}};
  const int64_t x_shape[2] = {4, 3}, y_shape[2] = {4, 2};
  skein_tensor tx = view(&xs[0][0], 2, x_shape), ty = view(&ys[0][0], 2, y_shape);
  BOOST_TEST(skein_train_step(c, &tx, &ty, nullptr) == SKEIN_ERROR_ARGUMENT);
  BOOST_TEST(contains(skein_last_error(c), "\"loss\": {\"plugin\": \"mse\"}"), skein_last_error(c));
  BOOST_TEST(skein_session_destroy(c) == SKEIN_OK);
}

// end_epoch without a step since the last one (twice by mistake) is refused:
// an empty epoch would shift every later epoch's number and the resume point.
BOOST_AUTO_TEST_CASE(end_epoch_without_a_step_is_refused) {
  skein::SessionOptions options;
  options.echo_log = false;
  options.run_dir = dir("empty-epoch");
  skein::Session s(fed_config(), options);
  auto refused = [&](const std::string& what) {
    std::string message;
    try {
      s.end_epoch();
      message = "accepted";
    } catch (const std::logic_error& e) {
      message = e.what();
    } catch (const std::exception& e) {
      message = std::string("not std::logic_error: ") + e.what();
    }
    BOOST_TEST(contains(message, "no step was taken in epoch"), what << ": " << message);
  };
  refused("before any step");
  BOOST_TEST(s.epoch() == 0);
  s.eval_step(torch::randn({4, 3}), torch::randn({4, 2}));  // an eval step opens an epoch too
  BOOST_TEST(!s.end_epoch());
  refused("a second end_epoch");
  BOOST_TEST(s.epoch() == 1);
  BOOST_TEST(s.history().size() == 1u);
  s.save_checkpoint("one");
  BOOST_TEST(load_json(dir("empty-epoch") + "/checkpoints/one/trainer.json")["epoch"] == 1);

  skein_session* c = nullptr;
  BOOST_TEST_REQUIRE(skein_session_create(fed_config().dump().c_str(), options_for(dir("empty-c")).c_str(), &c) ==
                         SKEIN_OK,
                     skein_last_error(nullptr));
  int stop = 7;
  BOOST_TEST(skein_end_epoch(c, &stop) == SKEIN_ERROR_STATE);
  BOOST_TEST(contains(skein_last_error(c), "no step was taken in epoch 1"), skein_last_error(c));
  int64_t epoch = -1;
  BOOST_TEST(skein_epoch(c, &epoch) == SKEIN_OK);
  BOOST_TEST(epoch == 0);
  BOOST_TEST(skein_session_destroy(c) == SKEIN_OK);
}

BOOST_AUTO_TEST_CASE(a_session_without_data_trains_predicts_and_stops_on_request) {
  auto cfg = fed_config();
  cfg["callbacks"] = {{{"plugin", "early_stopping"}, {"monitor", "valid_loss"}, {"patience", 1},
                       {"threshold", 10.0}}};
  skein::SessionOptions options;
  options.run_dir = dir("fed");
  options.echo_log = false;
  skein::Session s(cfg, options);
  const auto x = torch::randn({16, 3});
  const auto y = torch::randn({16, 2});
  const auto r = s.train_step(x, y);
  BOOST_TEST(r.loss > 0);
  BOOST_TEST(r.values.front().first == "train_loss");
  s.eval_step(x, y.to(torch::kDouble));  // converted
  BOOST_TEST(!s.end_epoch());
  s.train_step(x, y);
  s.eval_step(x, y);
  BOOST_TEST(s.end_epoch());  // no relative improvement of 1000%: stop asked
  BOOST_TEST(s.predict(x).sizes() == torch::IntArrayRef({16, 2}));
  BOOST_TEST(s.history().size() == 2u);
  BOOST_TEST(boost::filesystem::exists(dir("fed") + "/history.json"));
  BOOST_TEST(contains(test::message_of([&] { s.train_step(torch::randn({2, 4}), torch::randn({2, 2})); }), "[batch, 3]"));
}

// accumulate_steps: the optimizer steps after every second train_step.
BOOST_AUTO_TEST_CASE(a_session_steps_the_optimizer_once_per_accumulation_group) {
  auto cfg = fed_config();
  cfg["accumulate_steps"] = 2;
  skein::SessionOptions options;
  options.run_dir = dir("accumulate");
  options.echo_log = false;
  skein::Session s(cfg, options);
  auto weights = [&] { return s.context().model_base().parameters().front().detach().clone(); };
  const auto x = torch::randn({8, 3}), y = torch::randn({8, 2});
  const auto before = weights();
  s.train_step(x, y);
  BOOST_TEST(torch::equal(weights(), before));  // half a group: no step yet
  s.train_step(x, y);
  const auto after = weights();
  BOOST_TEST(!torch::equal(after, before));
  s.train_step(x, y);
  BOOST_TEST(torch::equal(weights(), after));
}

// save_checkpoint obeys the rules skein train's outputs obey: a relative
// name lands in the run's checkpoints/, the run directory, those above it
// and its own files are refused, a path outside the run needs the
// allow_outside_run_dir option, and nothing skein did not write is replaced.
BOOST_AUTO_TEST_CASE(a_session_checkpoint_replaces_nothing_skein_did_not_write) {
  namespace fs = boost::filesystem;
  const std::string run = dir("guarded");
  // The program's current directory: "" and ".." must not reach it.
  fs::create_directories(dir("cwd/deep"));
  test::write_text(dir("cwd/deep/data.txt"), "keep\n");
  struct Cwd {
    fs::path before = fs::current_path();
    ~Cwd() { fs::current_path(before); }
  } restore_cwd;
  fs::current_path(dir("cwd/deep"));
  fs::create_directories(dir("mine"));
  test::write_text(dir("mine/notes.txt"), "keep\n");
  test::write_text(dir("plain.txt"), "keep\n");
  skein::SessionOptions options;
  options.run_dir = run;
  options.echo_log = false;
  skein::Session s(fed_config(), options);
  const auto x = torch::randn({8, 3}), y = torch::randn({8, 2});
  s.train_step(x, y);
  s.end_epoch();
  fs::create_directories(run + "/checkpoints/foreign");
  test::write_text(run + "/checkpoints/foreign/notes.txt", "keep\n");
  const std::string config = test::read_text(run + "/config.json");
  auto refused = [&](const std::string& name, const std::string& why) {
    std::string message;
    try {
      s.save_checkpoint(name);
    } catch (const std::invalid_argument& e) {
      message = e.what();
    } catch (const std::exception& e) {
      message = std::string("not std::invalid_argument: ") + e.what();
    }
    BOOST_TEST(contains(message, why), "'" << name << "': " << message);
    BOOST_TEST(message.find('\n') == std::string::npos, message);
  };
  refused("", "is empty");
  refused("//", "is the run directory " + fs::absolute(run).lexically_normal().string() + " or one above it");
  refused("..", "'..' is the run directory");
  refused(".", "the run's own 'checkpoints'");
  refused(run, "is the run directory");
  refused(run + "/", "is the run directory");
  refused(dir(""), "or one above it");
  refused(run + "/checkpoints", "the run's own 'checkpoints'");
  refused("../config.json", "the run's own 'config.json'");
  refused(run + "/config.json", "the run's own 'config.json'");
  refused("foreign", "exists and is not a checkpoint");
  refused(dir("mine"), "outside the run directory");
  refused(dir("plain.txt"), "allow_outside_run_dir");
  BOOST_TEST(fs::is_regular_file(dir("cwd/deep/data.txt")));
  BOOST_TEST(test::read_text(run + "/config.json") == config);
  BOOST_TEST(test::read_text(run + "/checkpoints/foreign/notes.txt") == "keep\n");
  BOOST_TEST(test::read_text(dir("mine/notes.txt")) == "keep\n");
  BOOST_TEST(test::read_text(dir("plain.txt")) == "keep\n");
  BOOST_TEST(fs::is_regular_file(run + "/history.json"));
  // A name: in the run's checkpoints/, replaced as a whole the next time,
  // loaded by the same name.
  s.save_checkpoint("mine");
  BOOST_TEST(fs::is_regular_file(run + "/checkpoints/mine/trainer.json"));
  s.save_checkpoint("mine");
  s.save_checkpoint("sub/mine");
  BOOST_TEST(fs::is_regular_file(run + "/checkpoints/sub/mine/trainer.json"));
  s.load_checkpoint("mine");
  BOOST_TEST(!fs::exists(dir("cwd/deep/mine")));
  s.finish();

  // Outside the run with the option: still never over the caller's files.
  options.run_dir = dir("guarded-outside");
  options.allow_outside_run_dir = true;
  skein::Session t(fed_config(), options);
  t.train_step(x, y);
  t.end_epoch();
  auto refused_t = [&](const std::string& name, const std::string& why) {
    const std::string message = test::message_of([&] { t.save_checkpoint(name); });
    BOOST_TEST(contains(message, why), "'" << name << "': " << message);
  };
  refused_t(dir("mine"), "exists and is not a checkpoint");
  refused_t(dir("plain.txt"), "exists and is not a checkpoint");
  refused_t(dir(""), "or one above it");
  refused_t("..", "is the run directory");
  BOOST_TEST(test::read_text(dir("mine/notes.txt")) == "keep\n");
  BOOST_TEST(test::read_text(dir("plain.txt")) == "keep\n");
  t.save_checkpoint(dir("elsewhere/ck"));
  t.save_checkpoint(dir("elsewhere/ck"));  // its own checkpoint: replaced
  BOOST_TEST(fs::is_regular_file(dir("elsewhere/ck/trainer.json")));
  t.load_checkpoint(dir("elsewhere/ck"));
}

// A session's load checks a checkpoint and restores it from one reading of
// its trainer.json.
// checkpoint_background: save_checkpoint returns once the state is copied;
// a load right after it and the session's end wait for the write, so the
// checkpoint is complete when the session is gone, and it holds what one
// written at once holds.
BOOST_AUTO_TEST_CASE(a_session_checkpoint_written_in_the_background_is_complete_when_the_session_ends) {
  namespace fs = boost::filesystem;
  auto train = [&](const std::string& run, bool background) {
    auto cfg = fed_config();
    cfg["optimizer"] = {{"name", "adam"}, {"lr", 0.01}};
    cfg["checkpoint_background"] = background;
    skein::SessionOptions options;
    options.run_dir = run;
    options.echo_log = false;
    skein::Session s(cfg, options);
    const auto x = torch::linspace(-1, 1, 24).reshape({8, 3}), y = torch::linspace(0, 1, 16).reshape({8, 2});
    s.train_step(x, y);
    s.end_epoch();
    s.save_checkpoint("a");
    s.load_checkpoint("a");  // waits for the write in flight, then reads it
    s.train_step(x, y);
    s.end_epoch();
    s.save_checkpoint("b");
  };  // the session's end waits for b
  train(dir("background"), true);
  train(dir("at_once"), false);
  for (fs::directory_iterator it(dir("background") + "/checkpoints"), end; it != end; ++it)
    BOOST_TEST(it->path().filename().string().rfind(".tmp-", 0) != 0u, it->path());
  for (const char* file : {"a/model_state_dict.pt", "b/model_state_dict.pt", "b/model.pt"})
    BOOST_TEST((test::read_text(dir("background") + "/checkpoints/" + file) ==
                test::read_text(dir("at_once") + "/checkpoints/" + file)),
               file << " differs");
  BOOST_TEST(fs::exists(dir("background") + "/checkpoints/b/trainer.json"));
}

// A C program that saves and leaves with exit(0), never destroying its
// session: the save it was told is done is on disk (issue 62: with the
// write in the background it never was, and a .tmp-* stayed).
BOOST_AUTO_TEST_CASE(a_save_reported_done_is_on_disk_when_the_program_exits_at_once) {
  namespace fs = boost::filesystem;
  const nlohmann::json cfg = {{"model", {{"plugin", "mlp"}, {"hidden", {2048, 2048}}}},  // a write that takes a while
                              {"data_info", {{"input_shape", {6}}, {"num_classes", 3}}},
                              {"loss", {{"plugin", "mse"}}},
                              {"optimizer", {{"plugin", "adam"}, {"lr", 0.01}}},
                              {"checkpoint_background", true},
                              {"callbacks", nlohmann::json::array()}};
  test::write_text(dir("exit.json"), cfg.dump());
  for (int run = 0; run < 3; ++run) {
    const std::string run_dir = dir("exit" + std::to_string(run));
    const auto r = test::run(std::string(SESSION_EXIT_EXE) + " " + run_dir + " " + dir("exit.json"));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(fs::exists(run_dir + "/checkpoints/mine/trainer.json"));
    BOOST_TEST(fs::exists(run_dir + "/checkpoints/mine/model_state_dict.pt"));
    for (fs::directory_iterator it(run_dir + "/checkpoints"), end; it != end; ++it)
      BOOST_TEST(it->path().filename().string().rfind(".tmp-", 0) != 0u, it->path());
  }
}

BOOST_AUTO_TEST_CASE(a_session_load_reads_trainer_json_once) {
  skein::SessionOptions options;
  options.run_dir = dir("once");
  options.echo_log = false;
  skein::Session s(fed_config(), options);
  s.train_step(torch::randn({8, 3}), torch::randn({8, 2}));
  s.end_epoch();
  s.save_checkpoint("ck");
  OpenCounter files(dir("once/checkpoints/ck"));
  s.load_checkpoint("ck");
  auto opens = files.opens();
  BOOST_TEST(opens["model.pt"] >= 1);  // the watch saw the load
  BOOST_TEST(opens["trainer.json"] == 1);
}

// A checkpoint file replaced by a FIFO or a link to /dev/zero is refused
// before it is opened (it would block or never end), and the session goes on.
BOOST_AUTO_TEST_CASE(a_session_load_refuses_checkpoint_files_that_are_not_regular_files) {
  namespace fs = boost::filesystem;
  skein::SessionOptions options;
  options.run_dir = dir("special");
  options.echo_log = false;
  skein::Session s(fed_config(), options);
  const auto x = torch::randn({8, 3}), y = torch::randn({8, 2});
  s.train_step(x, y);
  s.end_epoch();
  s.save_checkpoint("ck");
  const std::string ck = dir("special/checkpoints/ck");
  fs::remove(ck + "/optimizer.pt");
  BOOST_TEST_REQUIRE(::mkfifo((ck + "/optimizer.pt").c_str(), 0600) == 0);
  std::string message = test::message_of<skein::ConfigError>([&] { s.load_checkpoint("ck"); });
  BOOST_TEST(contains(message, "'" + ck + "/optimizer.pt' is not a regular file (a FIFO)"), message);
  fs::remove(ck + "/optimizer.pt");
  fs::remove(ck + "/model.pt");
  fs::create_symlink("/dev/zero", ck + "/model.pt");
  message = test::message_of<skein::ConfigError>([&] { s.load_checkpoint("ck"); });
  BOOST_TEST(contains(message, "'" + ck + "/model.pt' is not a regular file (a character device)"), message);
  BOOST_CHECK_NO_THROW(s.train_step(x, y));
}

// A Session moved from holds no run: every call on it throws a
// std::logic_error saying so (it crashed before), and assigning a session
// to it makes it usable again.
BOOST_AUTO_TEST_CASE(a_moved_from_session_refuses_every_call) {
  skein::SessionOptions options;
  options.run_dir = dir("moved");
  options.echo_log = false;
  skein::Session from(fed_config(), options);
  skein::Session to(std::move(from));
  const auto x = torch::randn({4, 3}), y = torch::randn({4, 2});
  const std::vector<std::pair<std::string, std::function<void()>>> calls{
      {"train_step", [&] { from.train_step(x, y); }},
      {"eval_step", [&] { from.eval_step(x, y); }},
      {"predict", [&] { from.predict(x); }},
      {"end_epoch", [&] { from.end_epoch(); }},
      {"save_checkpoint", [&] { from.save_checkpoint("ck"); }},
      {"load_checkpoint", [&] { from.load_checkpoint("ck"); }},
      {"finish", [&] { from.finish(); }},
      {"context", [&] { from.context(); }},
      {"context", [&] { from.history(); }},  // history() is context().history()
      {"run_dir", [&] { from.run_dir(); }},
      {"epoch", [&] { from.epoch(); }}};
  for (const auto& [name, call] : calls) {
    const std::string message = test::message_of<std::logic_error>(call);
    BOOST_TEST(contains(message, name + ": this skein::Session was moved from"), name << ": " << message);
  }
  BOOST_TEST(to.train_step(x, y).loss > 0);
  from = std::move(to);  // usable again, and `to` is the one moved from
  BOOST_TEST(from.train_step(x, y).loss > 0);
  BOOST_TEST(contains(test::message_of<std::logic_error>([&] { to.epoch(); }), "moved from"));
}

// save_checkpoint is a collective: ranks that pass different names are told
// so at once, on every rank, in one line naming the ranks and their names
// (before, rank 0 waited for the others' parts until the timeout: "Socket
// Timeout"), and a name rank 0 refuses is refused on every rank. Two
// processes under torchrun, through the C ABI (ctypes).
BOOST_AUTO_TEST_CASE(ranks_saving_under_different_names_are_told_which_differ) {
  Dl_info library{};
  BOOST_TEST_REQUIRE(::dladdr(reinterpret_cast<void*>(&skein_session_create), &library) != 0);
  auto cfg = fed_config();
  cfg["parallel"] = {{"plugin", "ddp"}};
  const std::string script = dir("save_names.py");
  test::write_text(script, R"(import ctypes, json, os, sys
lib = ctypes.CDLL(sys.argv[1])
lib.skein_last_error.restype = ctypes.c_char_p
rank = int(os.environ["RANK"])
session = ctypes.c_void_p()
status = lib.skein_session_create(sys.argv[2].encode(), sys.argv[3].encode(), ctypes.byref(session))
if status != 0:
    sys.exit("create: " + lib.skein_last_error(None).decode())
status = lib.skein_save_checkpoint(session, ("ck_a" if rank == 0 else "ck_b").encode())
with open(sys.argv[4] + "." + str(rank), "w") as out:
    out.write(str(status) + " " + lib.skein_last_error(session).decode())
if rank == 0:  # what only rank 0 looks at: a directory skein did not write
    os.makedirs(sys.argv[5] + "/checkpoints/ck_x")
    open(sys.argv[5] + "/checkpoints/ck_x/notes.txt", "w").write("mine")
status = lib.skein_save_checkpoint(session, b"ck_x")
with open(sys.argv[4] + ".x." + str(rank), "w") as out:
    out.write(str(status) + " " + lib.skein_last_error(session).decode())
lib.skein_session_destroy(session)
)");
  const std::string result = dir("result");
  const std::string torchrun = test::for_uninstrumented_program() + "env SKEIN_TIMEOUT_S=30 " SKEIN_TEST_PYTHON
                               " -m torch.distributed.run --nproc_per_node 2 -r 2 -t 2 --master_addr 127.0.0.1 "
                               "--master_port " +
                               std::to_string(test::free_port()) + " ";
  const auto r = test::run(test::in_private_network(torchrun + script + " " + library.dli_fname + " '" + cfg.dump() +
                                                    "' '" + options_for(dir("names")) + "' " + result + " " +
                                                    dir("names")),
                           120);
  BOOST_TEST(r.exit_code == 0, r.err);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string got = test::read_text(result + "." + std::to_string(rank));
    BOOST_TEST(got.rfind(std::to_string(SKEIN_ERROR_ARGUMENT) + " ", 0) == 0u, "rank " << rank << ": " << got);
    BOOST_TEST(contains(got, "save_checkpoint: the ranks passed different names: 'ck_a' (rank 0), 'ck_b' (rank 1)"),
               "rank " << rank << ": " << got);
    BOOST_TEST(!contains(got, "imeout"), "rank " << rank << ": " << got);
  }
  BOOST_TEST(!boost::filesystem::exists(dir("names/checkpoints/ck_a")));
  // A name only rank 0 refuses (it alone checks what is there) is refused on every rank.
  for (int rank = 0; rank < 2; ++rank) {
    const std::string got = test::read_text(result + ".x." + std::to_string(rank));
    BOOST_TEST(got.rfind(std::to_string(SKEIN_ERROR_ARGUMENT) + " ", 0) == 0u, "rank " << rank << ": " << got);
    BOOST_TEST(contains(got, "exists and is not a checkpoint (it holds 'notes.txt')"), "rank " << rank << ": " << got);
    BOOST_TEST(contains(got, "refused on rank 0") == (rank == 1), "rank " << rank << ": " << got);
  }
  BOOST_TEST(test::read_text(dir("names/checkpoints/ck_x/notes.txt")) == "mine");
}

BOOST_AUTO_TEST_CASE(c_abi_trains_column_major_buffers_like_row_major_ones) {
  const std::string config = fed_config().dump();
  skein_session* s = nullptr;
  BOOST_TEST_REQUIRE(skein_session_create(config.c_str(), options_for(dir("c")).c_str(), &s) == SKEIN_OK,
                     skein_last_error(nullptr));
  float row[4][3], col[3][4];  // the same 4x3 matrix in C and Fortran order
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) row[i][j] = col[j][i] = static_cast<float>(i * 3 + j) / 10.0f;
  const int64_t shape[2] = {4, 3}, out_shape[2] = {4, 2};
  float out_row[4][2], out_col[2][4];
  skein_tensor in_r = view(&row[0][0], 2, shape), in_c = view(&col[0][0], 2, shape, SKEIN_COLUMN_MAJOR);
  skein_tensor o_r = view(&out_row[0][0], 2, out_shape), o_c = view(&out_col[0][0], 2, out_shape, SKEIN_COLUMN_MAJOR);
  BOOST_TEST(skein_predict(s, &in_r, &o_r) == SKEIN_OK);
  BOOST_TEST(skein_predict(s, &in_c, &o_c) == SKEIN_OK);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) BOOST_TEST(out_row[i][j] == out_col[j][i]);
  double loss = 0;
  BOOST_TEST(skein_train_step(s, &in_c, &o_c, &loss) == SKEIN_OK, skein_last_error(s));
  BOOST_TEST(loss >= 0);
  int stop = 1;
  BOOST_TEST(skein_end_epoch(s, &stop) == SKEIN_OK);
  BOOST_TEST(stop == 0);
  double value = 0;
  BOOST_TEST(skein_last_value(s, "train_loss", &value) == SKEIN_OK);
  BOOST_TEST(value == loss);
  int64_t epoch = 0;
  BOOST_TEST(skein_epoch(s, &epoch) == SKEIN_OK);
  BOOST_TEST(epoch == 1);
  BOOST_TEST(skein_session_destroy(s) == SKEIN_OK);
}

// Float32 buffers reach the model as they are: the batch the callbacks see
// lies in the caller's memory, in either layout; other dtypes are copies.
BOOST_AUTO_TEST_CASE(c_abi_uses_float32_inputs_in_place) {
  auto cfg = fed_config();
  cfg["callbacks"] = {{{"plugin", "probe_callback"}, {"record_inputs", true}}};
  const std::string options =
      nlohmann::json({{"run_dir", dir("inplace")}, {"echo_log", false}, {"plugin_dirs", {TEST_PLUGIN_DIR}}}).dump();
  skein_session* s = nullptr;
  BOOST_TEST_REQUIRE(skein_session_create(cfg.dump().c_str(), options.c_str(), &s) == SKEIN_OK,
                     skein_last_error(nullptr));
  float x[2][3] = {{1, 2, 3}, {4, 5, 6}}, y[2][2] = {};
  double xd[2][3] = {{1, 2, 3}, {4, 5, 6}};
  const int64_t xs[2] = {2, 3}, ys[2] = {2, 2};
  const double here = static_cast<double>(reinterpret_cast<std::uintptr_t>(&x[0][0]));
  for (skein_layout layout : {SKEIN_ROW_MAJOR, SKEIN_COLUMN_MAJOR}) {
    skein_tensor tx = view(&x[0][0], 2, xs, layout), ty = view(&y[0][0], 2, ys);
    BOOST_TEST_REQUIRE(skein_train_step(s, &tx, &ty, nullptr) == SKEIN_OK, skein_last_error(s));
    BOOST_TEST_REQUIRE(skein_end_epoch(s, nullptr) == SKEIN_OK, skein_last_error(s));
    double seen = 0;
    BOOST_TEST_REQUIRE(skein_last_value(s, "train_input_address", &seen) == SKEIN_OK, skein_last_error(s));
    BOOST_TEST(seen == here);
  }
  skein_tensor td{&xd[0][0], 2, xs, SKEIN_FLOAT64, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
  skein_tensor ty = view(&y[0][0], 2, ys);
  BOOST_TEST_REQUIRE(skein_train_step(s, &td, &ty, nullptr) == SKEIN_OK, skein_last_error(s));
  BOOST_TEST_REQUIRE(skein_end_epoch(s, nullptr) == SKEIN_OK);
  double seen = 0;
  BOOST_TEST_REQUIRE(skein_last_value(s, "train_input_address", &seen) == SKEIN_OK);
  BOOST_TEST(seen != static_cast<double>(reinterpret_cast<std::uintptr_t>(&xd[0][0])));
  BOOST_TEST(skein_session_destroy(s) == SKEIN_OK);
}

// A load checks everything before it changes anything: a model-only final
// and another model's checkpoint are refused with the session as it was
// (weights, optimizer state, epoch, history), and it trains on.
BOOST_AUTO_TEST_CASE(a_failed_load_changes_nothing) {
  auto cfg = fed_config();
  cfg["optimizer"] = {{"plugin", "sgd"}, {"lr", 0.1}, {"momentum", 0.9}};
  const auto x = torch::randn({8, 3}), y = torch::randn({8, 2});
  skein::SessionOptions options;
  options.echo_log = false;
  options.run_dir = dir("donor");
  {
    skein::Session donor(cfg, options);
    for (int epoch = 0; epoch < 2; ++epoch) donor.train_step(x * 2, y), donor.end_epoch();
    donor.finish();  // writes checkpoints/final, the model only
  }
  auto wider = cfg;
  wider["model"]["hidden"] = {16};
  options.run_dir = dir("wider");
  {
    skein::Session w(wider, options);
    w.train_step(x, y);
    w.end_epoch();
    w.save_checkpoint("wide");
  }
  auto adam = cfg;  // the same model: its weights load, its optimizer state does not fit
  adam["optimizer"] = {{"plugin", "adam"}, {"lr", 0.01}};
  options.run_dir = dir("adam");
  {
    skein::Session a(adam, options);
    a.train_step(x, y);
    a.end_epoch();
    a.save_checkpoint("adam");
  }
  options.run_dir = dir("loader");
  skein::Session s(cfg, options);
  s.train_step(x, y);
  s.end_epoch();
  s.train_step(x, y);
  s.end_epoch();
  auto optimizer_bytes = [&] {
    torch::serialize::OutputArchive archive;
    s.context().optimizer().save(archive);
    std::ostringstream out;
    archive.save_to(out);
    return out.str();
  };
  const auto predicted = s.predict(x);
  const std::string optimizer = optimizer_bytes();
  const auto unchanged = [&](const std::string& what) {
    BOOST_TEST(torch::equal(s.predict(x), predicted), what);
    BOOST_TEST(optimizer_bytes() == optimizer, what);
    BOOST_TEST(s.epoch() == 2, what);
    BOOST_TEST(s.history().size() == 2u, what);
  };
  const std::string final_message =
      test::message_of([&] { s.load_checkpoint(dir("donor") + "/checkpoints/final"); });
  BOOST_TEST(contains(final_message, "holds the model only"), final_message);
  BOOST_TEST(contains(final_message, "init_from"), final_message);
  BOOST_TEST(!contains(final_message, "optimizer.pt"), final_message);
  unchanged("after loading a model-only final");
  const std::string wide_message =
      test::message_of([&] { s.load_checkpoint(dir("wider") + "/checkpoints/wide"); });
  BOOST_TEST(contains(wide_message, "has shape"), wide_message);
  unchanged("after loading another model's checkpoint");
  const std::string adam_message =
      test::message_of([&] { s.load_checkpoint(dir("adam") + "/checkpoints/adam"); });
  BOOST_TEST(contains(adam_message, "optimizer.pt does not fit this run"), adam_message);
  unchanged("after loading another optimizer's checkpoint");
  BOOST_CHECK_NO_THROW(s.train_step(x, y));
  BOOST_CHECK_NO_THROW(s.end_epoch());

  // Through the C ABI: the same refusal, a status and the message.
  skein_session* c = nullptr;
  BOOST_TEST_REQUIRE(skein_session_create(cfg.dump().c_str(), options_for(dir("loader-c")).c_str(), &c) == SKEIN_OK,
                     skein_last_error(nullptr));
  BOOST_TEST(skein_load_checkpoint(c, (dir("donor") + "/checkpoints/final").c_str()) == SKEIN_ERROR_CONFIG);
  BOOST_TEST(contains(skein_last_error(c), "holds the model only"), skein_last_error(c));
  int64_t epoch = -1;
  BOOST_TEST(skein_epoch(c, &epoch) == SKEIN_OK);
  BOOST_TEST(epoch == 0);
  BOOST_TEST(skein_session_destroy(c) == SKEIN_OK);
}

// The C ABI's opt-in for checkpoints outside the run directory.
BOOST_AUTO_TEST_CASE(c_abi_saves_outside_the_run_only_when_allowed) {
  const std::string config = fed_config().dump();
  const std::string options =
      nlohmann::json({{"run_dir", dir("c-outside")}, {"echo_log", false}, {"allow_outside_run_dir", true}}).dump();
  skein_session* s = nullptr;
  BOOST_TEST_REQUIRE(skein_session_create(config.c_str(), options.c_str(), &s) == SKEIN_OK, skein_last_error(nullptr));
  float x[2][3] = {}, y[2][2] = {};
  const int64_t xs[2] = {2, 3}, ys[2] = {2, 2};
  skein_tensor tx = view(&x[0][0], 2, xs), ty = view(&y[0][0], 2, ys);
  BOOST_TEST_REQUIRE(skein_train_step(s, &tx, &ty, nullptr) == SKEIN_OK, skein_last_error(s));
  BOOST_TEST_REQUIRE(skein_end_epoch(s, nullptr) == SKEIN_OK, skein_last_error(s));
  BOOST_TEST(skein_save_checkpoint(s, dir("c-elsewhere").c_str()) == SKEIN_OK, skein_last_error(s));
  BOOST_TEST(boost::filesystem::is_regular_file(dir("c-elsewhere/trainer.json")));
  test::write_text(dir("c-file"), "keep\n");
  BOOST_TEST(skein_save_checkpoint(s, dir("c-file").c_str()) == SKEIN_ERROR_ARGUMENT);
  BOOST_TEST(contains(skein_last_error(s), "exists and is not a checkpoint"), skein_last_error(s));
  BOOST_TEST(test::read_text(dir("c-file")) == "keep\n");
  BOOST_TEST(skein_session_destroy(s) == SKEIN_OK);
}

// Every bad argument: its status, a message naming it, and no crash.
BOOST_AUTO_TEST_CASE(c_abi_bad_arguments_are_statuses_naming_the_argument) {
  skein_session* s = nullptr;
  BOOST_TEST(skein_session_create(nullptr, nullptr, &s) == SKEIN_ERROR_ARGUMENT);
  BOOST_TEST(contains(skein_last_error(nullptr), "config_json is NULL"));
  BOOST_TEST(skein_session_create("{", nullptr, &s) == SKEIN_ERROR_CONFIG);
  BOOST_TEST(contains(skein_last_error(nullptr), "invalid JSON"));
  BOOST_TEST(s == nullptr);
  const std::string config = fed_config().dump();
  BOOST_TEST(skein_session_create(config.c_str(), nullptr, nullptr) == SKEIN_ERROR_ARGUMENT);
  BOOST_TEST(contains(skein_last_error(nullptr), "out is NULL"));
  BOOST_TEST(skein_session_create(config.c_str(), R"({"colour": 1})", &s) == SKEIN_ERROR_ARGUMENT);
  BOOST_TEST(contains(skein_last_error(nullptr), "\"colour\""));
  BOOST_TEST(skein_session_create(config.c_str(), R"({"allow_outside_run_dir": 1})", &s) == SKEIN_ERROR_ARGUMENT);
  BOOST_TEST(contains(skein_last_error(nullptr), "\"allow_outside_run_dir\" must be true or false"));
  auto no_info = fed_config();
  no_info.erase("data_info");
  BOOST_TEST(skein_session_create(no_info.dump().c_str(), options_for(dir("x")).c_str(), &s) == SKEIN_ERROR_CONFIG);
  BOOST_TEST(contains(skein_last_error(nullptr), "data_info"));
  BOOST_TEST(!boost::filesystem::exists(dir("x") + "/config.json"));
  BOOST_TEST(skein_session_create_from_file(dir("missing.json").c_str(), nullptr, &s) == SKEIN_ERROR_CONFIG);
  BOOST_TEST(contains(skein_last_error(nullptr), "missing.json"));

  BOOST_TEST_REQUIRE(skein_session_create(config.c_str(), options_for(dir("bad")).c_str(), &s) == SKEIN_OK,
                     skein_last_error(nullptr));
  float x[2][3] = {}, y[2][2] = {};
  const int64_t xs[2] = {2, 3}, ys[2] = {2, 2}, wrong[2] = {2, 4}, zero[2] = {0, 3}, huge[2] = {INT64_MAX, 3};
  skein_tensor tx = view(&x[0][0], 2, xs), ty = view(&y[0][0], 2, ys);
  auto expect = [&](skein_status got, skein_status want, const char* part) {
    BOOST_TEST(got == want, skein_status_name(got) << " instead of " << skein_status_name(want) << ": " << skein_last_error(s));
    BOOST_TEST(contains(skein_last_error(s), part), skein_last_error(s) << " does not name " << part);
  };
  expect(skein_train_step(s, nullptr, &ty, nullptr), SKEIN_ERROR_ARGUMENT, "inputs is NULL");
  expect(skein_train_step(s, &tx, nullptr, nullptr), SKEIN_ERROR_ARGUMENT, "targets is NULL");
  skein_tensor t = tx;
  t.data = nullptr;
  expect(skein_train_step(s, &t, &ty, nullptr), SKEIN_ERROR_ARGUMENT, "inputs: data is NULL");
  t = tx, t.shape = nullptr;
  expect(skein_train_step(s, &t, &ty, nullptr), SKEIN_ERROR_ARGUMENT, "inputs: shape is NULL");
  t = tx, t.rank = 0;
  expect(skein_train_step(s, &t, &ty, nullptr), SKEIN_ERROR_ARGUMENT, "inputs: rank 0");
  t = tx, t.rank = 9;
  expect(skein_train_step(s, &t, &ty, nullptr), SKEIN_ERROR_ARGUMENT, "inputs: rank 9");
  t = tx, t.shape = zero;
  expect(skein_train_step(s, &t, &ty, nullptr), SKEIN_ERROR_ARGUMENT, "inputs: shape[0] is 0");
  t = tx, t.shape = huge;
  expect(skein_train_step(s, &t, &ty, nullptr), SKEIN_ERROR_ARGUMENT, "more elements");
  t = tx, t.dtype = 42;
  expect(skein_train_step(s, &t, &ty, nullptr), SKEIN_ERROR_ARGUMENT, "inputs: dtype 42");
  t = tx, t.layout = 7;
  expect(skein_train_step(s, &t, &ty, nullptr), SKEIN_ERROR_ARGUMENT, "inputs: layout 7");
  t = tx, t.shape = wrong;
  expect(skein_train_step(s, &t, &ty, nullptr), SKEIN_ERROR_ARGUMENT, "[batch, 3]");
  // ABI 2's device fields: a device this process cannot reach is refused
  // before the pointer is read (here: no GPU; on one, an ordinal beyond them).
  BOOST_TEST(skein_c_api_version() == 2);
  t = tx, t.device_type = 3;
  expect(skein_train_step(s, &t, &ty, nullptr), SKEIN_ERROR_ARGUMENT,
         "inputs: device_type 3 is neither SKEIN_DEVICE_HOST nor SKEIN_DEVICE_CUDA");
  t = tx, t.device_type = SKEIN_DEVICE_CUDA, t.device_index = 64;
  expect(skein_train_step(s, &t, &ty, nullptr), SKEIN_ERROR_ARGUMENT, "inputs: a buffer on CUDA device 64, but ");
  skein_tensor u = ty;
  u.rank = 1;
  expect(skein_eval_step(s, &tx, &u, nullptr), SKEIN_ERROR_ARGUMENT, "targets");
  float small[2][3];
  skein_tensor out = view(&small[0][0], 2, xs);
  expect(skein_predict(s, &tx, &out), SKEIN_ERROR_ARGUMENT, "outputs: the buffer has shape [2, 3]");
  out.dtype = SKEIN_INT32;
  expect(skein_predict(s, &tx, &out), SKEIN_ERROR_ARGUMENT, "outputs: dtype");
  expect(skein_last_value(s, "train_loss", nullptr), SKEIN_ERROR_ARGUMENT, "value is NULL");
  expect(skein_save_checkpoint(s, nullptr), SKEIN_ERROR_ARGUMENT, "dir is NULL");
  BOOST_TEST(skein_train_step(s, &tx, &ty, nullptr) == SKEIN_OK, skein_last_error(s));
  expect(skein_save_checkpoint(s, dir("ck").c_str()), SKEIN_ERROR_STATE, "end_epoch");
  double v = 0;
  BOOST_TEST(skein_end_epoch(s, nullptr) == SKEIN_OK);
  expect(skein_last_value(s, "no_such_key", &v), SKEIN_ERROR_ARGUMENT, "no_such_key");
  // A name lands in the run's checkpoints/; the run, its own files and
  // (without allow_outside_run_dir) anything outside it are refused.
  BOOST_TEST(skein_save_checkpoint(s, "ck") == SKEIN_OK, skein_last_error(s));
  BOOST_TEST(boost::filesystem::exists(dir("bad") + "/checkpoints/ck/trainer.json"));
  BOOST_TEST(skein_load_checkpoint(s, "ck") == SKEIN_OK, skein_last_error(s));
  expect(skein_load_checkpoint(s, dir("nothing").c_str()), SKEIN_ERROR_CONFIG, "nothing");
  expect(skein_save_checkpoint(s, ""), SKEIN_ERROR_ARGUMENT, "save_checkpoint: '' is empty");
  expect(skein_save_checkpoint(s, "//"), SKEIN_ERROR_ARGUMENT, "or one above it");
  expect(skein_save_checkpoint(s, ".."), SKEIN_ERROR_ARGUMENT, "is the run directory");
  expect(skein_save_checkpoint(s, (dir("bad") + "/config.json").c_str()), SKEIN_ERROR_ARGUMENT,
         "the run's own 'config.json'");
  expect(skein_save_checkpoint(s, dir("ck").c_str()), SKEIN_ERROR_ARGUMENT, "allow_outside_run_dir");
  BOOST_TEST(!boost::filesystem::exists(dir("ck")));
  BOOST_TEST(boost::filesystem::is_regular_file(dir("bad") + "/config.json"));
  BOOST_TEST(skein_finish(s) == SKEIN_OK);
  expect(skein_train_step(s, &tx, &ty, nullptr), SKEIN_ERROR_STATE, "finished");
  BOOST_TEST(skein_session_destroy(s) == SKEIN_OK);
  // A destroyed handle: an error, not a use after free.
  BOOST_TEST(skein_train_step(s, &tx, &ty, nullptr) == SKEIN_ERROR_HANDLE);
  BOOST_TEST(contains(skein_last_error(nullptr), "not a live session"));
  BOOST_TEST(skein_session_destroy(s) == SKEIN_ERROR_HANDLE);
  BOOST_TEST(skein_end_epoch(nullptr, nullptr) == SKEIN_ERROR_HANDLE);
  BOOST_TEST(contains(skein_last_error(nullptr), "session is NULL"));
  BOOST_TEST(std::strlen(skein_run_dir(s)) == 0u);
}

// The C++ example on two processes: ddp + tcpstore under torchrun.
BOOST_AUTO_TEST_CASE(the_cpp_example_trains_on_two_processes) {
  const std::string torchrun = "env SKEIN_TIMEOUT_S=60 " SKEIN_TEST_PYTHON
                               " -m torch.distributed.run --nproc_per_node 2 -r 2 -t 2 --master_addr 127.0.0.1 --master_port " +
                               std::to_string(test::free_port()) + " --no_python ";
  auto r = test::run(test::in_private_network(torchrun + PENDULUM_EXE " " SKEIN_SOURCE_DIR
                                              "/examples/embed/surrogate_ddp.json " + dir("ddp") + " 6"),
                     300);
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.out, "surrogate rollout"));
  const auto run = load_json(dir("ddp") + "/run.json");
  BOOST_TEST(run["consistent"].get<bool>());
  BOOST_TEST(boost::filesystem::exists(dir("ddp") + "/tensorboard"));
  BOOST_TEST(boost::filesystem::exists(dir("ddp") + "/checkpoints"));
}

BOOST_AUTO_TEST_SUITE_END()
