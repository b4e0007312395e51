#define BOOST_TEST_MODULE torchrun
#include <boost/test/unit_test.hpp>

#include <torch/version.h>

#include "test_support.hpp"

// `skein train` under the real torchrun of Debian's python3-torch (1.13:
// `python3 -m torch.distributed.run`, flags spelled with underscores; on
// Python 3.11 it needs `-r 2 -t 2`, or its own redirect parsing fails), with
// --no_python, in a private network namespace. Every run is bounded by
// `timeout` (test::run) and by skein's own SKEIN_TIMEOUT_S.

namespace {

using test::contains;
using test::load_json;
const std::string kSkein = SKEIN_EXE;
const std::string kProbe = " --plugin-dir " TEST_PLUGIN_DIR " ";

using test::two_process_config;

struct Fixture : test::Workspace {
  // torchrun with `rdzv` flags, 2 workers of `skein train ARGS`.
  test::CommandResult torchrun(const std::string& rdzv, const std::string& args) {
    const std::string cmd = "env SKEIN_TIMEOUT_S=60 " SKEIN_TEST_PYTHON
                            " -m torch.distributed.run --nproc_per_node 2 -r 2 -t 2 " +
                            rdzv + " --no_python " + kSkein + " train" + kProbe + args;
    return test::run(test::in_private_network(cmd), 300);
  }
  std::string static_rdzv(const std::string& more = "") const {
    return "--master_addr 127.0.0.1 --master_port " + std::to_string(test::free_port()) + " " + more;
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(torchrun, Fixture)

// Static rendezvous (the default): torchrun's agent serves the TCPStore at
// MASTER_ADDR:MASTER_PORT, and rank 0 must not try to serve it again.
// c10d rendezvous: rank 0 serves the workers' store itself.
BOOST_AUTO_TEST_CASE(two_workers_train_under_static_and_c10d_rendezvous) {
  const std::string config = write_config(two_process_config());
  for (const std::string mode : {"static", "c10d"}) {
    const std::string run = dir(mode);
    const std::string rdzv =
        mode == "static" ? static_rdzv()
                         : "--rdzv_backend c10d --rdzv_endpoint 127.0.0.1:" + std::to_string(test::free_port());
    auto r = torchrun(rdzv, "--config " + config + " --run-dir " + run + " --plugin probe_callback:dump=true");
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, mode << ": " << r.err);
    BOOST_TEST(load_json(run + "/history.json").size() == 4u, mode);
    BOOST_TEST(load_json(run + "/run.json")["consistent"].get<bool>(), mode);
    BOOST_TEST(test::read_text(run + "/probe_history_rank0.json") ==
                   test::read_text(run + "/probe_history_rank1.json"),
               mode);
  }
}

// --max_restarts 1: rank 1 is killed mid-way through epoch 3 of the first
// attempt; torchrun restarts both workers, which resume from the epoch-2
// checkpoint and end exactly as an uninterrupted run.
BOOST_AUTO_TEST_CASE(a_killed_worker_is_restarted_and_the_run_resumes_from_its_checkpoint) {
  const std::string config = write_config(two_process_config());
  const std::string straight = dir("straight"), restarted = dir("restarted");
  auto s = torchrun(static_rdzv(), "--config " + config + " --run-dir " + straight);
  BOOST_REQUIRE_MESSAGE(s.exit_code == 0, s.err);
  auto r = torchrun(static_rdzv("--max_restarts 1"),
                    "--config " + config + " --run-dir " + restarted +
                        " --plugin probe_callback:signal_at=3,signal=9,signal_rank=1,only_attempt=0");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.out, "Restart 1 (TORCHELASTIC_RESTART_COUNT): resuming " + restarted), r.out);
  BOOST_TEST(contains(r.out, "Resumed from " + restarted + "/checkpoints/epoch_0002"), r.out);
  test::expect_same_training(straight, restarted);
}

// Elastic, with the real torchrun: --nnodes 1:2 and the c10d rendezvous on
// two "hosts" (network namespaces joined by a veth pair, each with its own
// host name, listed in the /etc/hosts of a private mount namespace). host1
// dies inside epoch 2 (its agent and worker killed together); host0's agent
// restarts its worker alone, which resumes from the step checkpoint inside
// epoch 2 on 1 process and trains the rest of that epoch. host1 comes back
// while that worker waits at epoch 3 (the probe's hold, which tells the
// script through a FIFO): host0's agent restarts the group on both hosts,
// which resumes from epoch 2's checkpoint on 2. One consistent history.
// TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1: torch 2.x's agents otherwise share
// rank 0's store with the workers, and an agent that joins in a later round
// (host1 coming back) waits for its address in vain (docs/clusters.md);
// torch 1.13 ignores the variable.
BOOST_AUTO_TEST_CASE(an_elastic_job_loses_a_host_goes_on_with_the_other_and_takes_it_back) {
  auto cfg = two_process_config();
  cfg["history"] = {{"plugin", "tcpstore"}};
  cfg["callbacks"] = {{{"plugin", "checkpoint"}, {"every_n_steps", 2}}};
  const std::string config = write_config(cfg);
  const std::string run = dir("elastic"), fifo = dir("held"), hosts = dir("hosts");
  test::write_text(hosts, "127.0.0.1 localhost\n10.213.9.1 host0\n10.213.9.2 host1\n");
  // 6 batches a rank an epoch on 2, a step checkpoint every 2 steps: step 8
  // is epoch 2's 2nd batch; host1 dies as its 4th begins.
  const std::string probe = " --plugin probe_callback:signal_at=2,signal_batch=3,signal=9,signal_group=true,"
                            "signal_host=host1,only_attempt=0,hold_at=3,hold_world=1,hold_notify=" + fifo;
  const std::string agent =
      "agent() { ip netns exec host$1 unshare -u sh -c \"hostname host$1 && exec setsid -w env "
      "SKEIN_TIMEOUT_S=60 TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 " SKEIN_TEST_PYTHON " -m torch.distributed.run --nnodes 1:2 --nproc_per_node 1 "
      "--rdzv_backend c10d --rdzv_endpoint host0:" + std::to_string(test::free_port()) +
      " --rdzv_id skein-elastic --rdzv_conf last_call_timeout=10 --max_restarts 2 --monitor_interval 1 "
      "-r 2 -t 2 --no_python " + kSkein + " train" + kProbe + "--config " + config + " --run-dir " + run + probe +
      "\" > " + dir("") + "/agent$2.log 2>&1; }\n";
  const std::string script = dir("elastic.sh");
  test::write_text(script,
                   test::two_hosts_setup("10.213.9") + "mount --bind " + hosts + " /etc/hosts || exit 3\n"
                   "mkfifo " + fifo + " || exit 3\n" + agent +
                   "agent 0 0 & first=$!\n"
                   "agent 1 1a & lost=$!\n"
                   "wait $lost\n"
                   "timeout 240 head -n 1 " + fifo + " || exit 4\n"  // host0 alone waits at epoch 3
                   "agent 1 1b & back=$!\n"
                   "wait $first; a=$?; wait $back; b=$?; [ $a = 0 ] && [ $b = 0 ]\n");
  auto r = test::run("unshare -nm --propagation private sh " + script, 420);
  if (r.exit_code == 3) {
    BOOST_WARN_MESSAGE(false, "elastic two-host test skipped: this machine does not allow network "
                              "namespaces with veth pairs (" << r.err << ")");
    return;
  }
  const std::string logs = test::read_text(dir("agent0.log")) + "\n---\n" + test::read_text(dir("agent1a.log")) +
                           "\n---\n" + test::read_text(dir("agent1b.log"));
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err + logs);
  const std::string log = test::read_text(run + "/train.log");
  BOOST_TEST(contains(log, "World size 2 -> 1"), log);
  BOOST_TEST(contains(log, "the rest of epoch 2 after train batch 2 of each of the 2 ranks is re-sharded over 1"), log);
  BOOST_TEST(contains(log, "World size 1 -> 2"), log);
  const auto history = load_json(run + "/history.json");
  BOOST_REQUIRE(history.size() == 4u);
  BOOST_TEST(history[1].value("world_size", 0) == 1);
  BOOST_TEST(history[2].value("world_size", 0) == 2);
  const auto record = load_json(run + "/run.json");
  BOOST_TEST(record["consistent"].get<bool>());
  BOOST_TEST(record["world_size"].get<int>() == 2);
  BOOST_TEST(record["world_size_changes"] ==
             nlohmann::json::parse(R"([{"epoch": 2, "world_size": 1}, {"epoch": 3, "world_size": 2}])"));
}

// A failing worker writes torchrun's error file, so torchrun's end-of-run
// summary names skein's one-line error instead of "<N/A>".
BOOST_AUTO_TEST_CASE(a_config_error_reaches_torchruns_summary_through_its_error_file) {
  auto cfg = two_process_config();
  cfg["optimizer"]["lr"] = -1;
  const std::string config = write_config(cfg);
  auto r = torchrun(static_rdzv(), "--config " + config + " --run-dir " + dir("bad"));
  BOOST_TEST(r.exit_code != 0);
  BOOST_TEST(contains(r.err, "ChildFailedError"), r.err);
  BOOST_TEST(contains(r.err, "skein: error: "), r.err);
  BOOST_TEST(contains(r.err, "lr"), r.err);
  // The root cause is the rank whose error it is; a peer torchrun stopped
  // with SIGTERM before it failed on its own (whichever rank is slower)
  // may be listed too, rightly without an error file.
  const auto root = r.err.find("Root Cause");
  BOOST_REQUIRE_MESSAGE(root != std::string::npos, r.err);
  const std::string cause = r.err.substr(root);
  BOOST_TEST(contains(cause, "traceback : skein: error: "), cause);
  BOOST_TEST(!contains(cause, "error_file: <N/A>"), cause);
  BOOST_TEST(!contains(r.err, "traceback : To enable traceback"), r.err);
}

// TORCHELASTIC_ERROR_FILE set by hand may name any file: a failing worker
// writes its record only where there is none, nothing, or an earlier record;
// another run's config.json or history.json stays as it was (issue 49).
BOOST_AUTO_TEST_CASE(the_error_file_never_replaces_another_file) {
  auto cfg = two_process_config();
  cfg["optimizer"]["lr"] = -1;
  const std::string config = write_config(cfg);
  const auto fail_with_error_file = [&](const std::string& file) {
    return test::run("env TORCHELASTIC_ERROR_FILE=" + file + " " + kSkein + " train" + kProbe + "--config " + config +
                     " --run-dir " + dir("bad"));
  };
  const std::string config_json = dir("config.json"), history_json = dir("history.json");
  test::write_text(config_json, two_process_config().dump(2));
  test::write_text(history_json, "[{\"epoch\": 1, \"train_loss\": 0.5}]\n");
  for (const std::string& other : {config_json, history_json}) {
    const std::string before = test::read_text(other);
    auto r = fail_with_error_file(other);
    BOOST_TEST(r.exit_code == 2, r.err);
    BOOST_TEST(test::read_text(other) == before, other);
    BOOST_TEST(contains(r.err, "skein: warning: TORCHELASTIC_ERROR_FILE=" + other +
                                   " names a file that holds other data; left as it is"),
               r.err);
    BOOST_TEST(contains(r.err, "skein: error: "), r.err);
  }
  // Missing, empty, or an earlier error record: written in torchrun's layout.
  const std::string fresh = dir("fresh.json"), empty = dir("empty.json"), earlier = dir("earlier.json");
  test::write_text(empty, "");
  test::write_text(earlier, R"({"message": {"message": "RuntimeError: before", "extraInfo": {"timestamp": "1"}}})");
  for (const std::string& file : {fresh, empty, earlier}) {
    auto r = fail_with_error_file(file);
    BOOST_TEST(r.exit_code == 2, r.err);
    const auto record = load_json(file);
    BOOST_TEST(contains(record["message"]["message"].get<std::string>(), "skein: error: "), file);
    BOOST_TEST(contains(record["message"]["extraInfo"]["py_callstack"].get<std::string>(), "lr"), file);
  }
}

BOOST_AUTO_TEST_SUITE_END()
