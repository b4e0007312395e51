#define BOOST_TEST_MODULE mlflow
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <thread>

#include "test_support.hpp"

// The mlflow callback (plugins/callback/mlflow) against a real `mlflow
// server` (PyPI's mlflow in its venv, SKEIN_MLFLOW_PYTHON: scripts/setup.sh
// installs it), its SQLite store and artifacts in the test's folder, on a
// free port of the private network the whole program runs in (CTest starts
// it through tests/tools/private_network.sh). What Skein logged is read back
// with MLflow's own client (tests/python/mlflow_read.py). One server serves
// every case, each with an experiment of its own; the last case kills it
// (SIGKILL) mid-run and starts it again.

namespace {

using test::contains;
using test::load_json;
using json = nlohmann::json;
const std::string kSkein = SKEIN_EXE;
const std::string kPython = SKEIN_MLFLOW_PYTHON;
using Clock = std::chrono::steady_clock;

// Whether GET /health on 127.0.0.1:port answers 200 now. (A test's own
// probe; the plugin's HTTP is libcurl's.)
bool healthy(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  timeval bound{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
      char buffer[256];
      const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
      if (n > 0) answer.assign(buffer, static_cast<std::size_t>(n));
    }
  }
  close(fd);
  return answer.rfind("HTTP/1.1 200", 0) == 0 || answer.rfind("HTTP/1.0 200", 0) == 0;
}

// `mlflow server` in its own process group (its workers with it), killed
// with the group.
class MlflowServer {
 public:
  explicit MlflowServer(std::string dir) : dir_(std::move(dir)), port_(test::free_port()) {}
  ~MlflowServer() { kill(); }

  void start() {
    const std::string mlflow = kPython.substr(0, kPython.rfind('/') + 1) + "mlflow";
    BOOST_REQUIRE_MESSAGE(access(mlflow.c_str(), X_OK) == 0,
                          "no " << mlflow
                                << " (SKEIN_MLFLOW_PYTHON's venv): run scripts/setup.sh, which installs "
                                   "scripts/mlflow-test.txt");
    const std::string log = dir_ + "/server.log", store = "sqlite:///" + dir_ + "/mlflow.db",
                      artifacts = dir_ + "/artifacts", port = std::to_string(port_);
    pid_ = fork();
    BOOST_REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      setpgid(0, 0);
      const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(out, 1), dup2(out, 2);
      setenv("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false", 1);  // no job runner processes
      setenv("MLFLOW_DISABLE_TELEMETRY", "true", 1);
      execl(mlflow.c_str(), mlflow.c_str(), "server", "--backend-store-uri", store.c_str(), "--artifacts-destination",
            artifacts.c_str(), "--host", "127.0.0.1", "--port", port.c_str(), "--workers", "1",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    setpgid(pid_, pid_);
    // Ready when /health answers; a bounded wait (a first start creates the store).
    const auto deadline = Clock::now() + std::chrono::seconds(240);
    while (!healthy(port_)) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        BOOST_FAIL("mlflow server ended before answering: " << test::read_text(log));
      }
      if (Clock::now() > deadline) BOOST_FAIL("mlflow server silent for 240 s: " << test::read_text(log));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  void kill() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  std::string uri() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string dir_;
  int port_;
  pid_t pid_ = -1;
};

// The program's server, started by the first case that needs it.
struct Shared {
  test::TempDir dir;
  MlflowServer server{dir.str()};
};
Shared& shared() {
  static std::unique_ptr<Shared> s;
  if (!s) {
    s = std::make_unique<Shared>();
    s->server.start();
  }
  return *s;
}

// The runs of `experiment` as MLflow's client reads them.
json runs_of(const std::string& uri, const std::string& experiment) {
  auto r = test::run("env MLFLOW_DISABLE_TELEMETRY=true " + kPython +
                         " " SKEIN_SOURCE_DIR "/tests/python/mlflow_read.py " + uri + " " + experiment,
                     300);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return json::parse(r.out);
}

// [step, value] pairs of a metric's history.
std::vector<long> steps(const json& history) {
  std::vector<long> out;
  for (const auto& point : history) out.push_back(point.at(0).get<long>());
  return out;
}

// Every epoch's numeric values of history.json are the run's metrics, one
// value per epoch (step: the epoch).
void expect_epochs_logged(const json& run, const std::string& run_dir) {
  const json history = load_json(run_dir + "/history.json");
  std::vector<long> epochs;
  for (const auto& e : history) epochs.push_back(e.at("epoch").get<long>());
  for (const char* key : {"train_loss", "valid_loss", "valid_acc", "dur"}) {
    BOOST_TEST_REQUIRE(run.at("metrics").contains(key), key << " not logged: " << run.at("metrics").dump());
    const json& logged = run["metrics"][key];
    BOOST_TEST(steps(logged) == epochs, key);
    for (const auto& point : logged) {
      const double expected = history.at(point.at(0).get<std::size_t>() - 1).at(key).get<double>();
      BOOST_TEST(point.at(1).get<double>() == expected, key << " at epoch " << point.at(0));
    }
  }
}

std::string tag(const json& run, const std::string& key) { return run.at("tags").value(key, std::string("(none)")); }

// A run of `max_epochs` with checkpoints, logged to `experiment` at `uri`,
// into `run_dir`; required to succeed.
void train_checkpointed(test::Workspace& w, const std::string& uri, const std::string& experiment, long max_epochs,
                        const std::string& run_dir) {
  auto cfg = test::synthetic_config();
  cfg["max_epochs"] = max_epochs;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}},
                      {{"plugin", "mlflow"}, {"tracking_uri", uri}, {"experiment", experiment}}};
  auto first = test::run(kSkein + " train --config " + w.write_config(cfg) + " --run-dir " + run_dir);
  BOOST_REQUIRE_MESSAGE(first.exit_code == 0, first.err);
}

bool has(const json& list, const std::string& item) {
  return std::find(list.begin(), list.end(), json(item)) != list.end();
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(mlflow, test::Workspace)

// skein train --plugin 'mlflow:tracking_uri=...': the config as params, the
// epochs as metrics, the batch loss every N steps, tags, the run's files.
BOOST_AUTO_TEST_CASE(a_run_is_read_back_by_mlflows_client) {
  const std::string uri = shared().server.uri();
  auto cfg = test::synthetic_config();
  cfg["callbacks"] = {{{"plugin", "report"}}};
  const std::string run_dir = dir("first");
  auto r = test::run(kSkein + " train --config " + write_config(cfg) + " --run-dir " + run_dir +
                     " --plugin 'mlflow:tracking_uri=" + uri + ",experiment=one,every_n_steps=4'");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(!contains(r.err, "mlflow"), r.err);  // no warning

  const json runs = runs_of(uri, "one");
  BOOST_REQUIRE_EQUAL(runs.size(), 1u);
  const json& run = runs[0];
  BOOST_TEST(run.at("status") == "FINISHED");
  BOOST_TEST(run.at("name") == "first");  // the run directory's name
  BOOST_TEST(load_json(run_dir + "/mlflow_run.json").at("run_id") == run.at("run_id"));
  BOOST_TEST(contains(test::read_text(run_dir + "/.skein-outputs"), "mlflow_run.json"));
  // Params: the config, flattened.
  const json& params = run.at("params");
  BOOST_TEST(params.value("max_epochs", "") == "3", params.dump());
  BOOST_TEST(params.value("optimizer.lr", "") == "0.05");
  BOOST_TEST(params.value("model.plugin", "") == "mlp");
  BOOST_TEST(params.value("model.hidden", "") == "[32]");
  BOOST_TEST(params.value("callbacks.0.plugin", "") == "report");
  BOOST_TEST(params.value("callbacks.1.plugin", "") == "mlflow");
  expect_epochs_logged(run, run_dir);
  // 384 training samples in batches of 32: 12 steps an epoch, 36 in all; every 4th.
  BOOST_TEST(steps(run["metrics"].at("train_batch_loss")) == std::vector<long>({4, 8, 12, 16, 20, 24, 28, 32, 36}));
  BOOST_TEST(tag(run, "skein.world_size") == "1");
  BOOST_TEST(tag(run, "skein.device") == "cpu");
  BOOST_TEST(tag(run, "skein.version") == "0.1.0");
  BOOST_TEST(tag(run, "skein.libtorch").find('.') != std::string::npos);
  BOOST_TEST(tag(run, "skein.resumed") == "(none)");
  const json& files = run.at("artifacts");
  for (const char* file : {"history.json", "results.json", "report.html", "model/model.pt"})
    BOOST_TEST(has(files, file), file << " not in " << files.dump());
}

// Two processes: rank 0 logs, once, the synced history (every rank's).
BOOST_AUTO_TEST_CASE(two_processes_are_logged_once_by_rank_0) {
  const std::string uri = shared().server.uri();
  auto cfg = test::two_process_config();
  cfg["callbacks"].push_back({{"plugin", "mlflow"}, {"tracking_uri", uri}, {"experiment", "two"}});
  const std::string run_dir = dir("two");
  auto r = test::run(kSkein + " train --config " + write_config(cfg) + " --run-dir " + run_dir +
                     " --plugin-dir " TEST_PLUGIN_DIR " --nproc-per-node 2 --timeout 60");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const json runs = runs_of(uri, "two");
  BOOST_REQUIRE_EQUAL(runs.size(), 1u);
  BOOST_TEST(runs[0].at("status") == "FINISHED");
  BOOST_TEST(tag(runs[0], "skein.world_size") == "2");
  BOOST_TEST(runs[0].at("params").value("parallel.plugin", "") == "ddp");
  expect_epochs_logged(runs[0], run_dir);  // each epoch once: not once per rank
}

// --max-restarts: the restarted workers log to the same MLflow run, tagged
// with the restart's number; no second run.
BOOST_AUTO_TEST_CASE(a_restarted_run_continues_the_same_mlflow_run) {
  const std::string uri = shared().server.uri();
  auto cfg = test::two_process_config();
  cfg["callbacks"].push_back({{"plugin", "mlflow"}, {"tracking_uri", uri}, {"experiment", "restart"}});
  const std::string run_dir = dir("restarted");
  // Rank 1 is killed in epoch 3 of the first attempt only.
  auto r = test::run(kSkein + " train --config " + write_config(cfg) + " --run-dir " + run_dir +
                     " --plugin-dir " TEST_PLUGIN_DIR " --nproc-per-node 2 --timeout 60 --max-restarts 1"
                     " --plugin probe_callback:signal_at=3,signal=9,signal_rank=1,only_attempt=0");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.err, "restarting all workers (restart 1 of 1)"), r.err);
  const json runs = runs_of(uri, "restart");
  BOOST_REQUIRE_EQUAL(runs.size(), 1u);
  BOOST_TEST(runs[0].at("status") == "FINISHED");
  BOOST_TEST(tag(runs[0], "skein.restart") == "1");
  expect_epochs_logged(runs[0], run_dir);
}

// --resume continues the MLflow run of mlflow_run.json: one run, every
// epoch once, tagged as resumed.
BOOST_AUTO_TEST_CASE(a_resumed_run_continues_the_same_mlflow_run) {
  const std::string uri = shared().server.uri();
  const std::string run_dir = dir("resumed");
  train_checkpointed(*this, uri, "resume", 2, run_dir);
  const std::string run_id = load_json(run_dir + "/mlflow_run.json").at("run_id");
  auto resumed = test::run(kSkein + " train --resume " + run_dir + " --set max_epochs=4");
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  BOOST_TEST(load_json(run_dir + "/mlflow_run.json").at("run_id") == run_id);

  const json runs = runs_of(uri, "resume");
  BOOST_REQUIRE_EQUAL(runs.size(), 1u);  // no second run
  BOOST_TEST(runs[0].at("run_id") == run_id);
  BOOST_TEST(runs[0].at("status") == "FINISHED");
  BOOST_TEST(tag(runs[0], "skein.resumed") == "true");
  BOOST_TEST(tag(runs[0], "skein.resumed_after_epoch") == "2");
  BOOST_TEST(runs[0].at("params").value("max_epochs", "") == "2");  // the first attempt's config
  expect_epochs_logged(runs[0], run_dir);                           // epochs 1 to 4, each once
}

// A run id the server does not have (its store was replaced): the resumed
// run starts a new MLflow run, with the params, and says so.
BOOST_AUTO_TEST_CASE(a_run_the_server_lost_is_started_anew) {
  const std::string uri = shared().server.uri();
  const std::string run_dir = dir("lost");
  train_checkpointed(*this, uri, "lost", 1, run_dir);
  json kept = load_json(run_dir + "/mlflow_run.json");
  kept["run_id"] = "0123456789abcdef0123456789abcdef";
  test::write_text(run_dir + "/mlflow_run.json", kept.dump());
  auto resumed = test::run(kSkein + " train --resume " + run_dir + " --set max_epochs=2");
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  BOOST_TEST(contains(resumed.err, "0123456789abcdef0123456789abcdef"), resumed.err);
  const std::string run_id = load_json(run_dir + "/mlflow_run.json").at("run_id");
  BOOST_TEST(run_id != "0123456789abcdef0123456789abcdef");
  const json runs = runs_of(uri, "lost");
  BOOST_REQUIRE_EQUAL(runs.size(), 2u);
  for (const auto& run : runs) {
    if (run.at("run_id") != run_id) continue;
    BOOST_TEST(run.at("params").value("max_epochs", "") == "2");
    BOOST_TEST(steps(run.at("metrics").at("train_loss")) == std::vector<long>({2}));
    BOOST_TEST(tag(run, "skein.resumed") == "true");
  }
}

// A run id file of 2 GiB (sparse) is not read whole: a warning and a new run.
BOOST_AUTO_TEST_CASE(a_huge_run_id_file_is_passed_over_unread) {
  const std::string uri = shared().server.uri();
  const std::string run_dir = dir("huge");
  train_checkpointed(*this, uri, "huge", 1, run_dir);
  BOOST_TEST_REQUIRE(::truncate((run_dir + "/mlflow_run.json").c_str(), off_t{2} << 30) == 0);
  auto resumed = test::run(kSkein + " train --resume " + run_dir + " --set max_epochs=2");
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  BOOST_TEST(contains(resumed.err, "mlflow_run.json holds 2147483648 bytes, not a run id file"), resumed.err);
  BOOST_TEST(runs_of(uri, "huge").size() == 2u);
}

// A password in the tracking URI (issue 62, item 1, the callback's part) is
// in no message, no file the callback writes and no MLflow param; MLflow's
// MLFLOW_TRACKING_USERNAME/_PASSWORD are sent as basic authentication (the
// test's server has none and takes them). Left: config.json,
// config_history.jsonl and core's "command line (--plugin ...)" prefix of an
// error still hold the options as given.
BOOST_AUTO_TEST_CASE(a_password_in_the_tracking_uri_is_neither_printed_nor_logged) {
  const std::string secret = "S3cretPW";
  std::string uri = shared().server.uri();
  uri.insert(uri.find("://") + 3, "alice:" + secret + "@");
  const std::string run_dir = dir("secret");
  auto cfg = test::synthetic_config();
  cfg["callbacks"] = {{{"plugin", "mlflow"}, {"tracking_uri", uri}, {"experiment", "secret"}}};
  auto r = test::run("env MLFLOW_TRACKING_USERNAME=bob MLFLOW_TRACKING_PASSWORD=" + secret + "2 " + kSkein +
                     " train --config " + write_config(cfg) + " --run-dir " + run_dir);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(!contains(r.out + r.err, secret), r.out + r.err);
  for (const std::string file : {"mlflow_run.json", "train.log", "results.json", "history.json"})
    BOOST_TEST(!contains(test::read_text(run_dir + "/" + file), secret), file);
  BOOST_TEST(contains(test::read_text(run_dir + "/mlflow_run.json"), "alice:***@"));
  const json runs = runs_of(shared().server.uri(), "secret");
  BOOST_REQUIRE_EQUAL(runs.size(), 1u);
  BOOST_TEST(!contains(runs[0].at("params").dump(), secret), runs[0].at("params").dump());
  BOOST_TEST(contains(runs[0].at("params").dump(), "alice:***@"));
  // Refused and unreachable: the messages name the server without it.
  const std::string dead = "http://alice:" + secret + "@127.0.0.1:" + std::to_string(test::free_port());
  r = test::run(kSkein + " train --config " + write_config(test::synthetic_config()) + " --run-dir " +
                dir("secret_dead") + " --plugin 'mlflow:tracking_uri=" + dead + ",timeout_s=1'");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.err, "alice:***@127.0.0.1"), r.err);
  BOOST_TEST(!contains(r.err + test::read_text(dir("secret_dead") + "/train.log"), secret), r.err);
  r = test::run(kSkein + " train --config " + write_config(test::synthetic_config()) + " --run-dir " +
                dir("secret_bad") + " --plugin 'mlflow:tracking_uri=http://alice:" + secret + "@127.0.0.1:0'");
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(contains(r.err, "option 'tracking_uri' 'http://alice:***@127.0.0.1:0' has no valid port"), r.err);
}

// Nothing listens: training ends as always, with warnings (stderr and train.log).
BOOST_AUTO_TEST_CASE(a_dead_server_costs_a_warning) {
  auto cfg = test::synthetic_config();
  const std::string run_dir = dir("dead");
  const std::string uri = "http://127.0.0.1:" + std::to_string(test::free_port());
  auto r = test::run(kSkein + " train --config " + write_config(cfg) + " --run-dir " + run_dir +
                     " --plugin 'mlflow:tracking_uri=" + uri + ",timeout_s=2'");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string log = test::read_text(run_dir + "/train.log");
  BOOST_TEST(contains(log, "skein: warning: mlflow: tracking server " + uri + " unreachable"), log);
  BOOST_TEST(contains(log, "not sent to " + uri + "; given up"), log);
  BOOST_TEST(load_json(run_dir + "/history.json").size() == 3u);
  BOOST_TEST(!boost::filesystem::exists(run_dir + "/mlflow_run.json"));
}

// A malformed tracking_uri, or none at all: one error line naming it, exit 2.
BOOST_AUTO_TEST_CASE(a_bad_tracking_uri_is_one_error_line) {
  const std::string cfg = write_config(test::synthetic_config());
  auto bad = test::run(kSkein + " train --config " + cfg + " --run-dir " + dir("bad") +
                       " --plugin 'mlflow:tracking_uri=ftp://x'");
  test::expect_one_error(bad, 2, {"tracking_uri", "ftp://x", "http://"});
  auto none = test::run("env -u MLFLOW_TRACKING_URI " + kSkein + " train --config " + cfg + " --run-dir " +
                        dir("none") + " --plugin mlflow");
  test::expect_one_error(none, 2, {"tracking_uri", "MLFLOW_TRACKING_URI"});
  auto port = test::run(kSkein + " train --config " + cfg + " --run-dir " + dir("port") +
                        " --plugin 'mlflow:tracking_uri=http://127.0.0.1:99999'");
  test::expect_one_error(port, 2, {"tracking_uri", "port"});
}

// The server is killed (SIGKILL) mid-run: training goes on (a warning), and
// what it logged meanwhile waits; the server started again on its port gets
// it. Training is held (SIGSTOP) while the server starts again, so that it
// cannot end first; the run then ends normally.
BOOST_AUTO_TEST_CASE(a_server_killed_mid_run_gets_what_waited_when_back) {
  auto& server = shared().server;
  const std::string uri = server.uri();
  auto cfg = test::synthetic_config();
  cfg["max_epochs"] = 20;
  // 12 batches an epoch, each 50 ms longer: epochs of about a second.
  cfg["callbacks"] = {{{"plugin", "probe_callback"}, {"slow_below_world", 2}, {"slow_ms", 50}},
                      {{"plugin", "mlflow"}, {"tracking_uri", uri}, {"experiment", "killed"}, {"timeout_s", 2}}};
  const std::string run_dir = dir("killed"), pid_file = dir("skein.pid");
  const std::string command = "sh -c 'echo $$ >" + pid_file + "; exec " + kSkein + " train --config " +
                              write_config(cfg) + " --run-dir " + run_dir + " --plugin-dir " TEST_PLUGIN_DIR "'";
  auto training = std::async(std::launch::async, [&] { return test::run(command, 900); }).share();
  auto running = [&] { return training.wait_for(std::chrono::seconds(0)) != std::future_status::ready; };
  auto wait_for = [&](const std::string& what, const std::function<bool()>& seen) {
    const auto deadline = Clock::now() + std::chrono::seconds(240);
    while (!seen()) {
      if (!running()) BOOST_FAIL("training ended before " << what << ": " << training.get().err);
      if (Clock::now() > deadline) BOOST_FAIL("no " << what << " in 240 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  // The MLflow run exists and epoch 1 is over: kill the server.
  wait_for("MLflow run and first epoch", [&] {
    if (!boost::filesystem::exists(run_dir + "/mlflow_run.json")) return false;
    const auto history = json::parse(test::read_text(run_dir + "/history.json"), nullptr, false);
    return history.is_array() && !history.empty();
  });
  server.kill();
  wait_for("warning of the unreachable server",
           [&] { return contains(test::read_text(run_dir + "/train.log"), "unreachable"); });
  const pid_t group = getpgid(std::stoi(test::read_text(pid_file)));
  BOOST_REQUIRE(group > 0 && group != getpgrp());  // timeout(1)'s own group: skein and its processes
  ::kill(-group, SIGSTOP);
  server.start();
  ::kill(-group, SIGCONT);
  const auto r = training.get();
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string log = test::read_text(run_dir + "/train.log");
  BOOST_TEST(contains(log, "mlflow: tracking server " + uri + " reachable again"), log);
  BOOST_TEST(!contains(log, "not sent"), log);

  const json runs = runs_of(uri, "killed");
  BOOST_REQUIRE_EQUAL(runs.size(), 1u);
  BOOST_TEST(runs[0].at("status") == "FINISHED");
  // Every epoch, those the dead server missed too. (A batch the server took
  // as it died may have been sent again: a step's value twice, never another.)
  const json history = load_json(run_dir + "/history.json");
  const json& logged = runs[0].at("metrics").at("train_loss");
  std::vector<long> epochs = steps(logged);
  epochs.erase(std::unique(epochs.begin(), epochs.end()), epochs.end());
  BOOST_TEST(epochs.size() == 20u);
  BOOST_TEST(epochs.back() == 20);
  for (const auto& point : logged)
    BOOST_TEST(point.at(1).get<double>() ==
               history.at(point.at(0).get<std::size_t>() - 1).at("train_loss").get<double>());
}

BOOST_AUTO_TEST_SUITE_END()
