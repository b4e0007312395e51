#define BOOST_TEST_MODULE live_recovery
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "skein/io/store.hpp"
#include "skein/training/store/quorum.hpp"
#include "test_support.hpp"

extern char** environ;

// Live recovery's membership layer (skein::core::Quorum) across real
// processes: tests/tools/live_recovery_worker trains a miniature model over
// a Gloo group; this test serves the store (as a launcher's agent would:
// it outlives every worker), kills or stops workers at given steps, starts
// replacements, and checks that the survivors agree on each generation and
// end with the same step and the same parameters, bit for bit. The program
// runs in a private network namespace (tools/private_network.sh).
namespace {

using namespace std::chrono_literals;

class Job {
 public:
  struct Options {
    int world = 3;
    long steps = 120;
    std::size_t final_members = 3;
    int timeout_ms = 2000;  // each collective's bound: how a stopped worker is found out
  };

  explicit Job(Options o) : o_(o) {
    server_ = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", skein::tcp_store_options(0, true, 1, 120));
    for (int id = 0; id < o_.world; ++id) start(id, false);
  }
  ~Job() {
    for (auto& [id, pid] : pids_)
      if (!exit_codes_.count(id)) ::kill(pid, SIGKILL), ::waitpid(pid, nullptr, 0);
  }

  // A worker (`join`: a replacement, whose results go under `key_id`).
  void start(int key_id, bool join) {
    std::vector<std::string> args = {LIVE_RECOVERY_WORKER,          std::to_string(server_->getPort()),
                                     std::to_string(key_id),         std::to_string(o_.world),
                                     std::to_string(o_.steps),       std::to_string(o_.final_members),
                                     std::to_string(o_.timeout_ms)};
    if (join) args.push_back("join");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    const std::string log = tmp_.str("worker" + std::to_string(key_id) + ".log");
    posix_spawn_file_actions_addopen(&files, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&files, 1, 2);
    pid_t pid = -1;
    BOOST_REQUIRE(posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&files);
    pids_[key_id] = pid;
  }

  // Blocks until the store has `key` (set by a worker), up to a minute.
  // Polled: libtorch 1.13's TCPStore wakes no waiter for a key that
  // compareSet made (the quorum's decisions).
  void wait_for(const std::string& key) {
    until(60s, [&] { return server_->check({key}); }, "no " + key);
  }
  // Until worker `key_id` has committed `step` steps (its own progress count).
  void wait_for_progress(int key_id, long step) {
    const std::string key = "progress/" + std::to_string(key_id);
    until(60s, [&] { return server_->add(key, 0) >= step; },
          "worker " + std::to_string(key_id) + " did not reach step " + std::to_string(step));
  }
  void signal(int key_id, int sig) { BOOST_REQUIRE(::kill(pids_.at(key_id), sig) == 0); }
  // SIGKILL, and once it is gone, said in the store as a launcher's agent says it.
  void kill_and_report(int key_id) {
    signal(key_id, SIGKILL);
    int status = 0;
    BOOST_REQUIRE(::waitpid(pids_.at(key_id), &status, 0) == pids_.at(key_id));
    exit_codes_[key_id] = exit_code(status);
    skein::core::Quorum(*server_, "test", {}).report_lost(key_id);
  }

  // Every worker's exit (the signal's negative when killed), bounded.
  std::map<int, int> wait_all() {
    until(240s, [&] {
      for (auto& [id, pid] : pids_) {
        int status = 0;
        if (!exit_codes_.count(id) && ::waitpid(pid, &status, WNOHANG) == pid) exit_codes_[id] = exit_code(status);
      }
      return exit_codes_.size() == pids_.size();
    }, "a worker did not end");
    return exit_codes_;
  }

  nlohmann::json result(int key_id) { return nlohmann::json::parse(skein::store_get(*server_, "result/" + std::to_string(key_id))); }
  std::string log(int key_id) const { return test::read_text(tmp_.str("worker" + std::to_string(key_id) + ".log")); }

  // The workers `finished` exited 0 and agree on everything; returns their results.
  std::vector<nlohmann::json> expect_in_step(const std::set<int>& finished) {
    const auto codes = wait_all();
    std::vector<nlohmann::json> results;
    for (int id : finished) {
      BOOST_TEST(codes.at(id) == 0, "worker " << id << " exited " << codes.at(id) << ": " << log(id));
      results.push_back(result(id));
    }
    for (const auto& r : results) {
      BOOST_TEST_MESSAGE("worker " << r["first_id"] << ": " << r.dump());
      BOOST_TEST(r["finished"].get<bool>());
      BOOST_TEST(r["generation"] == results.front()["generation"]);
      BOOST_TEST(r["members"] == results.front()["members"]);
      BOOST_TEST(r["step"] == results.front()["step"]);
      BOOST_TEST(r["digest"] == results.front()["digest"], "parameters differ: " << r.dump());
    }
    // Each step applied once: the parameters are the final step's, exactly.
    double value = 0;
    for (long step = 0; step < results.front()["step"].get<long>(); ++step) value -= 0.001 * ((step % 7) + 1);
    BOOST_TEST(results.front()["value"].get<double>() == value);
    BOOST_TEST(results.front()["members"].size() == o_.final_members);
    BOOST_TEST(results.front()["step"].get<long>() >= o_.steps);
    return results;
  }

 private:
  static int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status); }

  // Polls `done` every millisecond; past `bound`, fails with `what` and
  // every worker's output.
  template <class Done>
  void until(std::chrono::seconds bound, Done done, const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        std::string logs;
        for (const auto& [id, pid] : pids_) logs += "\n--- worker " + std::to_string(id) + ":\n" + log(id);
        BOOST_FAIL(what << " within " << bound.count() << " s; the workers' output:" << logs);
      }
      std::this_thread::sleep_for(1ms);
    }
  }

  Options o_;
  test::TempDir tmp_;
  c10::intrusive_ptr<c10d::TCPStore> server_;
  std::map<int, pid_t> pids_;
  std::map<int, int> exit_codes_;
};

std::string decision(int generation) { return "skein/quorum/test/" + std::to_string(generation) + "/members"; }
std::string arrived(int generation, int id) {
  return "skein/quorum/test/" + std::to_string(generation) + "/alive/" + std::to_string(id);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_killed_worker_is_replaced_and_the_survivors_never_restart) {
  Job job({3, 120, 3});
  job.wait_for_progress(2, 30);
  job.kill_and_report(2);
  job.start(100, true);  // the replacement, as the launcher would start it
  const auto results = job.expect_in_step({0, 1, 100});
  BOOST_TEST(job.wait_all().at(2) == -SIGKILL);
  BOOST_TEST(results[0]["members"] == nlohmann::json::array({0, 1, 3}));
  BOOST_TEST(results[0]["failures"].get<int>() >= 1);  // the survivors recovered in place
  BOOST_TEST(results[2]["id"] == 3);
}

BOOST_AUTO_TEST_CASE(the_leader_killed_the_others_go_on_without_it) {
  Job job({3, 120, 2});
  job.wait_for_progress(0, 30);
  job.signal(0, SIGKILL);
  const auto results = job.expect_in_step({1, 2});
  BOOST_TEST(results[0]["members"] == nlohmann::json::array({1, 2}));
  BOOST_TEST(results[0]["generation"].get<int>() >= 1);
}

BOOST_AUTO_TEST_CASE(a_worker_killed_during_the_recovery_costs_one_more_round) {
  Job job({3, 120, 2});
  job.wait_for_progress(0, 30);
  job.signal(2, SIGKILL);
  job.wait_for(arrived(1, 1));  // 1 has arrived to agree on generation 1: killed there
  job.signal(1, SIGKILL);
  job.start(100, true);
  const auto results = job.expect_in_step({0, 100});
  BOOST_TEST(results[0]["members"] == nlohmann::json::array({0, 3}));
  BOOST_TEST(results[0]["generation"].get<int>() >= 2);
}

BOOST_AUTO_TEST_CASE(a_stopped_worker_left_out_comes_back_as_a_replacement) {
  Job job({3, 120, 3});
  job.wait_for_progress(0, 30);
  job.signal(1, SIGSTOP);
  job.wait_for(decision(1));  // the others went on without it
  job.signal(1, SIGCONT);
  const auto results = job.expect_in_step({0, 1, 2});
  BOOST_TEST(results[0]["members"] == nlohmann::json::array({0, 2, 3}));
  BOOST_TEST(results[1]["id"] == 3);  // worker 1, now id 3
  BOOST_TEST(results[1]["rejoins"] == 1);
}
