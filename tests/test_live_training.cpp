#define BOOST_TEST_MODULE live_training
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "test_support.hpp"

// Live recovery in `skein train` (docs/distributed.md, "Live recovery"): 3
// workers under skein's launcher, on loopback in a private network namespace,
// one of them killed (SIGKILL) or stopped (SIGSTOP) mid-epoch by the probe
// callback. The survivors go on without a restart, a replacement joins, the
// run ends with exit 0, every epoch in the history and the recoveries in
// run.json. The engine itself checks after each hand-over that every rank's
// parameters are the same (a run that passed that check ends with exit 0).

namespace {

using test::contains;
using test::load_json;
const std::string kSkein = SKEIN_EXE;
const std::string kProbe = " --plugin-dir " TEST_PLUGIN_DIR " ";
// The probe: no per-process trace in the history (processes of a recovery
// differ in it), slow while the world is below `world` (until a replacement
// is in), and `signal` to the process that started as `rank` as epoch 2's
// sixth train batch begins.
std::string probe_signal(int signal, int rank, int world = 3) {
  return " --plugin probe_callback:record_events=false,slow_below_world=" + std::to_string(world) +
         ",signal_at=2,signal_batch=5,signal=" + std::to_string(signal) + ",signal_rank=" + std::to_string(rank);
}

nlohmann::json live_config() {
  auto cfg = test::two_process_config();
  // Timeouts that a loaded machine (the suite runs two tests at a time) does
  // not reach by slowness alone: a killed peer is found at once anyway, its
  // connections reset; the stopped one costs them.
  cfg["parallel"] = {{"plugin", "ddp"}, {"live_recovery", true}, {"collective_timeout_s", 5}, {"recovery_window_s", 10}};
  cfg["data"]["samples"] = 1536;  // 12 train batches per rank and epoch on 3 ranks
  return cfg;
}

struct Fixture : test::Workspace {
  // `skein train --nproc-per-node 3` with `args`, in a private network namespace.
  test::CommandResult train(const std::string& name, const std::string& args, const std::string& env = "",
                            const nlohmann::json& cfg = live_config()) {
    const std::string config = write_config(cfg);
    return test::run(test::in_private_network(env + " " + kSkein + " train" + kProbe + "--config " + config +
                                              " --run-dir " + dir(name) +
                                              " --nproc-per-node 3 --timeout 60 --max-restarts 3 " + args),
                     300);
  }
  // Run `name`'s first recovery in run.json: a process lost.
  nlohmann::json first_loss(const std::string& name) {
    const auto first = load_json(dir(name) + "/run.json").at("recoveries").at(0);
    BOOST_TEST(first.at("event") == "lost");
    BOOST_TEST(first.at("world_size_before").get<int>() == 3);
    return first;
  }
  // The recoveries run.json lists, by event ("lost", "joined").
  int events(const std::string& name, const std::string& event) {
    const auto run = load_json(dir(name) + "/run.json");
    int n = 0;
    for (const auto& r : run.at("recoveries")) n += r.at("event") == event;
    return n;
  }
  void expect_whole_run(const std::string& name, const test::CommandResult& r) {
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    BOOST_TEST(!contains(r.err, "restarting all workers"), r.err);  // the survivors went on
    const auto history = load_json(dir(name) + "/history.json");
    BOOST_TEST(history.size() == 4u);
    const auto run = load_json(dir(name) + "/run.json");
    BOOST_TEST(run.at("consistent").get<bool>());
    BOOST_TEST(run.at("history_digests").size() == 3u);  // the replacement's among them
    BOOST_TEST(contains(test::read_text(dir(name) + "/train.log"), "Test accuracy"));
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(live_training, Fixture)

BOOST_AUTO_TEST_CASE(a_killed_worker_is_replaced_while_the_others_go_on) {
  auto r = train("killed", probe_signal(9, 1));
  expect_whole_run("killed", r);
  BOOST_TEST(contains(r.err, "skein: worker rank 1 on "), r.err);
  BOOST_TEST(contains(r.err, "the others go on (live recovery); replacement 1 joins"), r.err);
  BOOST_TEST(events("killed", "lost") == 1);
  BOOST_TEST(events("killed", "joined") == 1);
  const auto lost = first_loss("killed");
  BOOST_TEST(lost.at("epoch").get<long>() == 2);
  BOOST_TEST(lost.at("world_size_after").get<int>() == 2);
  BOOST_TEST(lost.at("seconds_lost").get<double>() >= 0);
  // Each epoch records the world size it ended on: 3 for the one the
  // replacement joined in (epoch 2, unless starting it took longer than the
  // rest of that epoch: a loaded or sanitized build), 2 for epoch 2 before
  // it. The straight run's accuracy is the same within a point (the data
  // are 12 batches an epoch).
  const auto history = load_json(dir("killed") + "/history.json");
  const auto run = load_json(dir("killed") + "/run.json");
  long joined_in = 0;
  for (const auto& e : run.at("recoveries"))
    if (e.at("event") == "joined") joined_in = e.at("epoch").get<long>();
  BOOST_REQUIRE(joined_in >= 2);
  BOOST_TEST(history.at(joined_in - 1).at("world_size").get<int>() == 3);
  BOOST_TEST(history.at(1).at("world_size").get<int>() == (joined_in == 2 ? 3 : 2));
  auto straight = train("straight", "");
  BOOST_REQUIRE_MESSAGE(straight.exit_code == 0, straight.err);
  const double a = load_json(dir("killed") + "/results.json").at("test_accuracy").get<double>();
  const double b = load_json(dir("straight") + "/results.json").at("test_accuracy").get<double>();
  BOOST_TEST(std::abs(a - b) <= 0.05, a << " vs " << b);
}

BOOST_AUTO_TEST_CASE(the_main_rank_killed_hands_the_log_to_the_next) {
  auto r = train("main", probe_signal(9, 0));
  expect_whole_run("main", r);
  const std::string log = test::read_text(dir("main") + "/train.log");
  BOOST_TEST(contains(log, "Live recovery: 3 -> 2 processes (generation 1: ids 1, 2)"), log);
  BOOST_TEST(contains(log, "a replacement joins, 2 -> 3 processes (generation 2: ids 1, 2, 3)"), log);
  BOOST_TEST(contains(log, "Final model (epoch 4)"), log);
}

BOOST_AUTO_TEST_CASE(a_worker_lost_inside_the_recovery_costs_one_more_round) {
  // Rank 1 killed; rank 2 then dies in the hand-over of the first recovery.
  auto r = train("twice", probe_signal(9, 1), test::with_fault("SKEIN_TEST_KILL_IN_HAND_OVER=2"));
  expect_whole_run("twice", r);
  BOOST_TEST(events("twice", "lost") == 1);
  const auto lost = first_loss("twice");
  BOOST_TEST(lost.at("rounds").get<int>() == 2);
  BOOST_TEST(lost.at("world_size_after").get<int>() == 1);
  BOOST_TEST(events("twice", "joined") >= 1);
}

BOOST_AUTO_TEST_CASE(a_stopped_worker_is_left_out_and_comes_back_as_a_replacement) {
  // Rank 2 stops itself; once the others went on without it, it is continued.
  const std::string config = write_config(live_config());
  const std::string run_dir = dir("stopped");
  const std::string script =
      kSkein + " train" + kProbe + "--config " + config + " --run-dir " + run_dir +
      " --nproc-per-node 3 --timeout 60" + probe_signal(19, 2) + " & "
      "L=$!; until grep -qs -- '-> 2 processes' " + run_dir + "/train.log; do "
      "kill -0 $L 2>/dev/null || break; sleep 0.1; done; "
      "for p in $(pgrep -f -- '--run-dir=" + run_dir + "'); do kill -CONT $p; done; wait $L";
  auto r = test::run(test::in_private_network(script), 300);
  expect_whole_run("stopped", r);
  BOOST_TEST(events("stopped", "lost") == 1);
  BOOST_TEST(events("stopped", "joined") == 1);
  BOOST_TEST(!contains(r.err, "was lost"), r.err);  // no process ended: the launcher replaced nobody
}

BOOST_AUTO_TEST_CASE(under_zero_a_lost_ranks_optimizer_shard_lives_on_in_the_rank_before_it) {
  // Adam's state sharded over 3 ranks, each shard also stepped by the rank
  // before it; gradient clipping asks for the owners of each membership.
  auto cfg = live_config();
  cfg["parallel"]["plugin"] = "zero";
  cfg["optimizer"] = {{"name", "adam"}, {"lr", 0.01}};
  cfg["callbacks"].push_back({{"plugin", "grad_clip"}, {"max_norm", 1.0}});
  // Rank 0 killed: its shard comes from rank 2, and rank 1 leads.
  auto r = train("zero", probe_signal(9, 0), "", cfg);
  expect_whole_run("zero", r);
  BOOST_TEST(events("zero", "lost") == 1);
  BOOST_TEST(events("zero", "joined") == 1);
  const std::string log = test::read_text(dir("zero") + "/train.log");
  BOOST_TEST(contains(log, "Live recovery: 3 -> 2 processes (generation 1: ids 1, 2)"), log);
  // Each rank holds two shards of three: 2/3 of the optimizer's state.
  const auto results = load_json(dir("zero") + "/results.json");
  BOOST_TEST(results.at("optimizer_state_mb_per_rank").size() == 3u);
  auto straight = train("zero_straight", "", "", cfg);
  BOOST_REQUIRE_MESSAGE(straight.exit_code == 0, straight.err);
  const double a = results.at("test_accuracy").get<double>();
  const double b = load_json(dir("zero_straight") + "/results.json").at("test_accuracy").get<double>();
  BOOST_TEST(std::abs(a - b) <= 0.05, a << " vs " << b);
}

// torchrun's arrangement: one torchrun per replica group (here 3 of one
// worker each, each its own static rendezvous), meeting in a FileStore that
// outlives them all. torchrun restarts its own killed worker (its agent
// restarts every local worker, which is only that one), which joins live.
BOOST_AUTO_TEST_CASE(under_torchrun_one_agent_per_replica_group_restarts_its_worker_into_the_live_run) {
  const std::string config = write_config(live_config());
  const std::string run_dir = dir("torchrun");
  std::string script = "F=" + dir("store") + "; ";
  for (int g = 0; g < 3; ++g)
    script += "env SKEIN_TIMEOUT_S=60 SKEIN_REPLICA_GROUPS=3 SKEIN_REPLICA_GROUP=" + std::to_string(g) +
              " SKEIN_STORE_FILE=$F SKEIN_RUN_ID=live-torchrun " SKEIN_TEST_PYTHON
              " -m torch.distributed.run --nproc_per_node 1 -r 2 -t 2 --max_restarts 2 --monitor_interval 1"
              " --master_addr 127.0.0.1 --master_port " + std::to_string(test::free_port()) +
              " --no_python " + kSkein + " train" + kProbe + "--config " + config + " --run-dir " + run_dir +
              probe_signal(9, 1) + ",only_attempt=0 & P" + std::to_string(g) + "=$!; ";
  script += "E=0; for p in $P0 $P1 $P2; do wait $p || E=1; done; exit $E";
  auto r = test::run(test::in_private_network(script), 300);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(load_json(run_dir + "/history.json").size() == 4u);
  const auto run = load_json(run_dir + "/run.json");
  BOOST_TEST(run.at("consistent").get<bool>());
  BOOST_TEST(run.at("history_digests").size() == 3u);
  int lost = 0, joined = 0;
  for (const auto& e : run.at("recoveries")) (e.at("event") == "lost" ? lost : joined)++;
  BOOST_TEST(lost == 1);
  BOOST_TEST(joined == 1);
  BOOST_TEST(!contains(test::read_text(run_dir + "/train.log"), "Resumed from"));
}

// Two "machines" (network namespaces joined by a veth pair), two workers
// each: a worker of node 1 killed is reported lost by node 1's launcher
// through node 0's store and replaced on node 1.
BOOST_AUTO_TEST_CASE(across_two_machines_the_lost_workers_launcher_replaces_it) {
  auto cfg = live_config();
  const std::string run_dir = dir("two");
  // On a filesystem both "machines" share (the run directory).
  cfg["history"] = {{"plugin", "filestore"}, {"path", run_dir + "/history.filestore"}};
  cfg["data"]["samples"] = 2048;  // 12 train batches per rank and epoch on 4 ranks
  const std::string config = write_config(cfg);
  auto node = [&](int rank, const std::string& ip) {
    return "ip netns exec host" + std::to_string(rank) + " " + kSkein + " train" + kProbe + "--config " + config +
           " --run-dir " + run_dir + probe_signal(9, 3, 4) + " --plugin ddp:gloo_host=" + ip +
           " --nnodes 2 --node-rank " + std::to_string(rank) +
           " --nproc-per-node 2 --master-addr 10.213.9.1 --master-port 29650 --timeout 60 --max-restarts 2 > " +
           dir("node" + std::to_string(rank) + ".log") + " 2>&1";
  };
  const std::string script = dir("two_hosts.sh");
  test::write_text(script, test::two_hosts_setup("10.213.9") + node(0, "10.213.9.1") + " &\n" +
                               node(1, "10.213.9.2") + " &\n" +
                               "wait %1; a=$?; wait %2; b=$?; [ $a = 0 ] && [ $b = 0 ]\n");  // 3: no namespaces
  auto r = test::run("unshare -nm --propagation private sh " + script, 300);
  if (r.exit_code == 3) {
    BOOST_WARN_MESSAGE(false, "two-host test skipped: this machine does not allow network namespaces with veth "
                              "pairs (" << r.err << ")");
    return;
  }
  const std::string node1 = test::read_text(dir("node1.log"));
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, test::read_text(dir("node0.log")) + "\n" + node1);
  BOOST_TEST(contains(node1, "skein: worker rank 3 on "), node1);
  BOOST_TEST(contains(node1, "replacement 1 joins"), node1);
  BOOST_TEST(load_json(run_dir + "/history.json").size() == 4u);
  const auto run = load_json(run_dir + "/run.json");
  BOOST_TEST(run.at("consistent").get<bool>());
  BOOST_TEST(run.at("history_digests").size() == 4u);
  BOOST_TEST(events("two", "lost") == 1);
  BOOST_TEST(events("two", "joined") == 1);
}

BOOST_AUTO_TEST_SUITE_END()
