#define BOOST_TEST_MODULE faults
#include <boost/test/unit_test.hpp>

#include <random>
#include <set>

#include "test_support.hpp"

// Faults on loopback: workers killed, stopped or throwing, a launcher
// interrupted or killed, an unreachable or taken store port, kill -9 during
// checkpoint writes, and restarts (--max-restarts). Every run is bounded by
// `timeout` (test::run) and by skein's own --timeout; nothing waits on a clock.

namespace fs = boost::filesystem;

namespace {

using test::contains;
using test::load_json;
const std::string kSkein = SKEIN_EXE;
const std::string kProbe = " --plugin-dir " TEST_PLUGIN_DIR " ";

using test::two_process_config;
const auto comparable = test::comparable_history;

using Fixture = test::TrainWorkspace;

}  // namespace

BOOST_FIXTURE_TEST_SUITE(faults, Fixture)

BOOST_AUTO_TEST_CASE(a_worker_killed_mid_epoch_stops_the_run_with_a_summary) {
  const std::string config = write_config(two_process_config());
  auto r = skein("--config " + config + " --run-dir " + dir("killed") +
                 " --nproc-per-node 2 --timeout 30 "
                 "--plugin probe_callback:signal_at=2,signal=9,signal_rank=1");
  BOOST_TEST(r.exit_code == 1);
  // The summary: time, host, rank, signal; the root cause is the killed rank.
  BOOST_TEST(contains(r.err, "skein: error: worker rank 1 on "), r.err);
  BOOST_TEST(contains(r.err, "failed at 20"), r.err);
  BOOST_TEST(contains(r.err, "with signal 9"), r.err);
  // The checkpoint of epoch 1 is intact and the run resumes from it (the
  // probe, part of the run's config.json, is told to stay quiet).
  auto resumed = skein("--resume " + dir("killed") + " --nproc-per-node 2 --timeout 30 " +
                       "--plugin probe_callback:signal_at=0");
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  BOOST_TEST(contains(resumed.out, "epoch_0001"), resumed.out);
  BOOST_TEST(load_json(dir("killed") + "/history.json").size() == 4u);
}

BOOST_AUTO_TEST_CASE(a_stopped_worker_makes_its_peers_time_out) {
  const std::string config = write_config(two_process_config());
  auto r = skein("--config " + config + " --run-dir " + dir("stopped") +
                 " --nproc-per-node 2 --timeout 5 "
                 "--plugin probe_callback:signal_at=2,signal=19,signal_rank=1");
  BOOST_TEST(r.exit_code == 1);
  // Rank 0 gave up waiting for rank 1 and is named as the first failure.
  BOOST_TEST(contains(r.err, "skein: error: worker rank 0 on "), r.err);
  BOOST_TEST(contains(r.err, "a peer died or did not answer within the run's timeout"), r.err);
}

BOOST_AUTO_TEST_CASE(an_interrupted_launcher_stops_its_workers_and_keeps_the_checkpoint) {
  const std::string config = write_config(two_process_config());
  const std::string run = dir("interrupted");
  // Rank 0 sends SIGTERM to the launcher mid-way through epoch 3.
  auto r = skein("--config " + config + " --run-dir " + run + " --nproc-per-node 2 --timeout 30 " +
                 "--plugin probe_callback:signal_at=3,signal=15,signal_rank=0,signal_launcher=true");
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(contains(r.err, "interrupted at"), r.err);
  BOOST_TEST(contains(r.err, "all workers stopped"), r.err);
  BOOST_TEST(fs::exists(run + "/checkpoints/epoch_0002/trainer.json"));
  auto resumed = skein("--resume " + run + " --nproc-per-node 2 --timeout 30 " +
                       "--plugin probe_callback:signal_at=0");
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  BOOST_TEST(contains(resumed.out, "epoch_0002"), resumed.out);
  BOOST_TEST(load_json(run + "/history.json").size() == 4u);
}

BOOST_AUTO_TEST_CASE(max_restarts_restarts_all_workers_from_the_last_checkpoint) {
  const std::string config = write_config(two_process_config());
  const std::string straight = dir("straight"), restarted = dir("restarted");
  auto s = skein("--config " + config + " --run-dir " + straight + " --nproc-per-node 2 --timeout 30");
  BOOST_REQUIRE_MESSAGE(s.exit_code == 0, s.err);
  // Rank 1 is killed in epoch 3 of the first attempt only.
  auto r = skein("--config " + config + " --run-dir " + restarted +
                 " --nproc-per-node 2 --timeout 30 --max-restarts 2 "
                 "--plugin probe_callback:signal_at=3,signal=9,signal_rank=1,only_attempt=0");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.err, "with signal 9"), r.err);
  BOOST_TEST(contains(r.err, "restarting all workers (restart 1 of 2)"), r.err);
  BOOST_TEST(!contains(r.err, "restart 2 of 2"), r.err);
  BOOST_TEST(contains(r.out, "Resumed from " + restarted + "/checkpoints/epoch_0002"), r.out);
  // The restarted run trained exactly as the uninterrupted one.
  test::expect_same_training(straight, restarted);
}

// With step checkpoints a restart continues inside the epoch, at the batch
// after the last checkpointed step, and trains as if nothing happened.
BOOST_AUTO_TEST_CASE(max_restarts_continue_from_a_step_checkpoint_inside_the_epoch) {
  auto cfg = two_process_config();
  cfg["accumulate_steps"] = 2;  // 6 batches a rank, 3 steps an epoch
  cfg["callbacks"] = {{{"plugin", "checkpoint"}, {"every_n_steps", 2}}};
  const std::string config = write_config(cfg);
  const std::string straight = dir("straight"), restarted = dir("restarted");
  auto s = skein("--config " + config + " --run-dir " + straight + " --nproc-per-node 2 --timeout 30");
  BOOST_REQUIRE_MESSAGE(s.exit_code == 0, s.err);
  // Step 8 is epoch 3's 4th batch; rank 1 is killed as its 6th begins.
  auto r = skein("--config " + config + " --run-dir " + restarted +
                 " --nproc-per-node 2 --timeout 30 --max-restarts 1 "
                 "--plugin probe_callback:signal_at=3,signal_batch=5,signal=9,signal_rank=1,only_attempt=0");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.err, "restarting all workers (restart 1 of 1)"), r.err);
  BOOST_TEST(contains(r.out, "Resumed from " + restarted + "/checkpoints/step_00000008"), r.out);
  test::expect_same_training(straight, restarted);
}

BOOST_AUTO_TEST_CASE(restarts_are_bounded_and_start_over_without_a_checkpoint) {
  auto cfg = two_process_config();
  cfg["callbacks"] = nlohmann::json::array();  // no checkpoints
  const std::string config = write_config(cfg);
  // Fails in every attempt: two restarts, then the launcher gives up.
  auto r = skein("--config " + config + " --run-dir " + dir("always") +
                 " --nproc-per-node 2 --timeout 30 --max-restarts 2 "
                 "--plugin probe_callback:fail_at=2,fail_rank=1");
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(contains(r.err, "restart 2 of 2"), r.err);
  BOOST_TEST(contains(r.err, "giving up after 2 restarts"), r.err);
  BOOST_TEST(contains(r.err, "probe failure on rank 1"), r.err);
  // Fails in the first attempt only: the second starts over (no checkpoint).
  auto once = skein("--config " + config + " --run-dir " + dir("once") +
                    " --nproc-per-node 2 --timeout 30 --max-restarts 1 "
                    "--plugin probe_callback:fail_at=2,fail_rank=1,only_attempt=0");
  BOOST_REQUIRE_MESSAGE(once.exit_code == 0, once.err);
  BOOST_TEST(!contains(once.out, "Resumed"), once.out);
  BOOST_TEST(load_json(dir("once") + "/history.json").size() == 4u);
  // A config error is not retried.
  auto bad = skein("--config " + config + " --run-dir " + dir("bad") +
                   " --nproc-per-node 2 --timeout 30 --max-restarts 3 --set data.samples=1");
  BOOST_TEST(bad.exit_code == 2);
  BOOST_TEST(!contains(bad.err, "restarting"), bad.err);
}

// A worker killed inside a write to the launcher's FileStore (an OOM kill
// while zero streams its optimizer shard to rank 0 at a checkpoint) leaves a
// torn record, which libtorch's FileStore re-reads forever: the launcher
// spun on it when it let the store go (100 % CPU, SIGTERM ignored, no
// restart). It now drops a failed attempt's store unread and restarts.
BOOST_AUTO_TEST_CASE(a_worker_killed_inside_a_store_write_does_not_hang_its_launcher) {
  auto cfg = test::synthetic_config();
  cfg["model"]["hidden"] = {256, 256};  // Adam's state of half of it: ~280 KB, streamed through the store
  cfg["optimizer"] = {{"name", "adam"}, {"lr", 0.001}};
  cfg["parallel"] = {{"plugin", "zero"}, {"stage", 2}};
  cfg["max_epochs"] = 2;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
  const std::string run = dir("torn");
  auto r = skein("--config " + write_config(cfg) + " --run-dir " + run + " --nproc-per-node 2 --timeout 30 --max-restarts 1",
                 test::with_fault("SKEIN_TEST_TEAR_STORE_WRITE_RANK=1"));
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.err, "worker rank 1"), r.err);
  BOOST_TEST(contains(r.err, "with signal 9"), r.err);
  BOOST_TEST(contains(r.err, "restarting all workers (restart 1 of 1)"), r.err);
  BOOST_TEST(load_json(run + "/history.json").size() == 2u);
}

BOOST_AUTO_TEST_CASE(an_unreachable_master_is_a_clear_error_within_the_timeout) {
  const std::string config = write_config(two_process_config());
  const int port = test::free_port();  // nobody listens there
  auto r = skein("--config " + config + " --run-dir " + dir("unreachable") +
                 " --nnodes 2 --node-rank 1 --nproc-per-node 1 --master-addr 127.0.0.1 "
                 "--master-port " + std::to_string(port) + " --timeout 3");
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(contains(r.err, "skein: error: cannot reach the run's store at 127.0.0.1:" +
                                 std::to_string(port)), r.err);
}

BOOST_AUTO_TEST_CASE(a_store_port_in_use_is_a_clear_error) {
  const std::string config = write_config(two_process_config());
  const std::string cmd = kSkein + " train" + kProbe + "--config " + config + " --run-dir " +
                          dir("taken") + " --nnodes 2 --node-rank 0 --nproc-per-node 1 "
                          "--master-port $SKEIN_TEST_HELD_PORT --timeout 3";
  auto r = test::run(test::in_private_network(std::string(HOLD_PORT_EXE) + " '" + cmd + "'"), 120);
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(contains(r.err, "skein: error: cannot start the run's store at 127.0.0.1:"), r.err);
  BOOST_TEST(contains(r.err, "in use"), r.err);
}

// Two launchers on loopback as two nodes; node 0's launcher (which serves the
// store) is killed with SIGKILL mid-epoch: its worker dies with it, and node 1
// stops with an error instead of waiting.
BOOST_AUTO_TEST_CASE(a_store_server_gone_stops_the_other_node) {
  auto cfg = two_process_config();
  cfg["history"] = {{"plugin", "tcpstore"}};  // the run's store, served by node 0's launcher
  const std::string config = write_config(cfg);
  const int port = test::free_port();
  auto node = [&](int rank, const std::string& extra) {
    return kSkein + " train" + kProbe + "--config " + config + " --run-dir " + dir("gone") +
           " --nnodes 2 --node-rank " + std::to_string(rank) +
           " --nproc-per-node 1 --master-port " + std::to_string(port) + " --timeout 10" + extra +
           " > " + dir("node" + std::to_string(rank) + ".log") + " 2>&1";
  };
  const std::string script =
      node(0, " --plugin probe_callback:signal_at=2,signal=9,signal_rank=0,signal_launcher=true") +
      " & " + node(1, "") + " & wait %1; a=$?; wait %2; b=$?; echo \"$a $b\"";
  auto r = test::run(test::in_private_network(script), 120);
  const std::string log1 = test::read_text(dir("node1.log"));
  BOOST_TEST(contains(r.out, "137 1"), r.out + test::read_text(dir("node0.log")) + log1);
  BOOST_TEST(contains(log1, "skein: error: worker rank 1 on "), log1);
}

// Two launchers on loopback as two nodes, node 0 with --max-restarts 1 and
// node 1 without (node 0's holds for every node); the worker of node 1 is
// killed in the first attempt: both nodes restart and the run completes from
// its checkpoint.
BOOST_AUTO_TEST_CASE(max_restarts_restarts_every_node) {
  auto cfg = two_process_config();
  cfg["history"] = {{"plugin", "tcpstore"}};
  const std::string config = write_config(cfg);
  const int port = test::free_port();
  auto node = [&](int rank) {
    return kSkein + " train" + kProbe + "--config " + config + " --run-dir " + dir("nodes") +
           " --nnodes 2 --node-rank " + std::to_string(rank) + " --nproc-per-node 1 --master-port " +
           std::to_string(port) + " --timeout 20" + (rank == 0 ? " --max-restarts 1" : "") +
           " --plugin probe_callback:signal_at=3,signal=9,signal_rank=1,only_attempt=0 > " +
           dir("restart" + std::to_string(rank) + ".log") + " 2>&1";
  };
  auto r = test::run(test::in_private_network(node(0) + " & " + node(1) +
                                              " & wait %1; a=$?; wait %2; b=$?; echo \"$a $b\""), 120);
  const std::string log0 = test::read_text(dir("restart0.log")), log1 = test::read_text(dir("restart1.log"));
  BOOST_REQUIRE_MESSAGE(contains(r.out, "0 0"), r.out + log0 + log1);
  BOOST_TEST(contains(log0, "restarting all workers (restart 1 of 1)"), log0);
  BOOST_TEST(contains(log1, "restarting all workers (restart 1 of 1)"), log1);
  BOOST_TEST(contains(log1, "node 1 follows node 0's --max-restarts 1 (its own: 0)"), log1);
  BOOST_TEST(contains(log0, "Resumed from " + dir("nodes") + "/checkpoints/epoch_0002"), log0);
  BOOST_TEST(load_json(dir("nodes") + "/run.json")["consistent"].get<bool>());
  BOOST_TEST(load_json(dir("nodes") + "/history.json").size() == 4u);
}

// Every listening socket of a one-machine run is on loopback: the run's store
// is a FileStore, Gloo binds 127.0.0.1. (The probe sees listeners: with
// history 'tcpstore' on one machine, libtorch's TCPStore server (1.13 and 2.x)
// listens on every interface, as the README says.)
BOOST_AUTO_TEST_CASE(a_one_machine_run_listens_on_loopback_only) {
  if (!test::private_network_available()) {
    BOOST_WARN_MESSAGE(false, "skipped: needs a private network namespace to see only this run");
    return;
  }
  auto listeners = [&](const std::string& history) {
    auto cfg = two_process_config();
    cfg["history"] = {{"plugin", history}};
    const std::string run = dir("listeners_" + history);
    auto r = skein("--config " + write_config(cfg) + " --run-dir " + run +
                   " --nproc-per-node 2 --timeout 30 --plugin probe_callback:dump_listeners=true");
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    std::set<std::string> hosts;
    std::istringstream lines(test::read_text(run + "/probe_listeners_rank0.txt"));
    for (std::string line; std::getline(lines, line);) hosts.insert(line.substr(0, line.find(':')));
    return hosts;
  };
  // 127.0.0.1 or ::1, as /proc/net/tcp{,6} print them.
  const std::set<std::string> loopback = {"0100007F", "00000000000000000000000001000000"};
  for (const auto& host : listeners("filestore")) BOOST_TEST(loopback.count(host) == 1u, host);
  BOOST_TEST(!listeners("tcpstore").empty());
}

// A small filesystem of its own for a command: a tmpfs of `size` mounted at
// `mount` inside a user and mount namespace (unshare -rm, no root needed;
// with a private network, as skein() runs), gone when the command ends.
// False where this machine allows no such namespace.
bool small_filesystems_available() {
  static const bool available =
      std::system("unshare -rm sh -c 'd=$(mktemp -d) && mount -t tmpfs -o size=4k tmpfs \"$d\"' >/dev/null 2>&1") == 0;
  return available;
}
// `command` run with a tmpfs of `size` at `mount`: its status, stdout and
// stderr (kept in `out`, outside the tmpfs); then `after`, which copies out
// what the test reads from the tmpfs.
test::CommandResult on_small_filesystem(const std::string& mount, const std::string& size, const std::string& command,
                                        const std::string& out, const std::string& after = "true") {
  fs::create_directories(mount);
  fs::create_directories(out);
  const auto r = test::run("unshare -rmn sh -c 'ip link set lo up && mount -t tmpfs -o size=" + size + " tmpfs " +
                               mount + " && " + command + " >" + out + "/stdout 2>" + out + "/stderr; echo $? >" +
                               out + "/rc; " + after + "'",
                           200);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  test::CommandResult result;
  result.exit_code = std::stoi(test::read_text(out + "/rc"));
  result.out = test::read_text(out + "/stdout");
  result.err = test::read_text(out + "/stderr");
  return result;
}
// A full disk's failure: exit 1, one line naming `culprit` and the cause,
// never libtorch's "terminate called ...".
void check_full_disk_line(const test::CommandResult& r, const std::string& culprit) {
  BOOST_TEST(r.exit_code == 1, r.err);
  BOOST_TEST(test::one_error_line(r), r.err);
  BOOST_TEST(contains(r.err, culprit), r.err);
  BOOST_TEST(contains(r.err, "No space left on device"), r.err);
  BOOST_TEST(!contains(r.err, "terminate"), r.err);
}

// kill -9 at every `stride`-th step of checkpoint writing (files, syncs,
// renames, links), then at random moments from outside: --resume always
// finds the last complete checkpoint and ends where an uninterrupted run
// ends. `background`: written on their own thread (checkpoint_background),
// training going on meanwhile.
void kill_9_while_checkpoints_are_written(Fixture& f, bool background, int stride, int at_least) {
  auto cfg = test::synthetic_config();
  cfg["optimizer"] = {{"name", "adam"}, {"lr", 0.01}};
  cfg["max_epochs"] = 4;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
  cfg["checkpoint_background"] = background;
  const std::string config = f.write_config(cfg);
  const std::string straight = f.dir("straight");
  BOOST_REQUIRE(f.skein("--config " + config + " --run-dir " + straight).exit_code == 0);
  const auto expected = comparable(load_json(straight + "/history.json"));
  const std::string expected_model = test::read_text(straight + "/checkpoints/epoch_0004/model.pt");

  auto finish = [&](const std::string& run, const std::string& what) {
    if (!fs::exists(run + "/config.json")) {
      // Killed before the run started writing.
      BOOST_TEST(f.skein("--resume " + run).exit_code == 2, what);
      return;
    }
    if (!fs::exists(run + "/checkpoints/epoch_0001/trainer.json") &&
        !fs::exists(run + "/checkpoints/epoch_0002/trainer.json") &&
        !fs::exists(run + "/checkpoints/epoch_0003/trainer.json") &&
        !fs::exists(run + "/checkpoints/epoch_0004/trainer.json")) {
      // Killed before the first checkpoint was complete: nothing to resume.
      auto r = f.skein("--resume " + run);
      BOOST_TEST(r.exit_code == 2, what);
      BOOST_TEST(contains(r.err, "no complete checkpoint"), what << r.err);
      return;
    }
    auto r = f.skein("--resume " + run + " --set max_epochs=4");
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, what << ": " << r.err);
    BOOST_TEST(comparable(load_json(run + "/history.json")) == expected, what);
    BOOST_TEST(test::read_text(run + "/checkpoints/epoch_0004/model.pt") == expected_model, what);
  };

  int killed = 0;
  for (int step = 1;; step += stride) {
    const std::string run = f.dir("step" + std::to_string(step));
    auto r = f.skein("--config " + config + " --run-dir " + run,
                   test::with_fault("SKEIN_TEST_KILL_AT_CHECKPOINT_STEP=" + std::to_string(step)));
    if (r.exit_code == 0) break;  // past the last step of the last checkpoint
    BOOST_REQUIRE_MESSAGE(r.exit_code == 137, "step " << step << ": " << r.err);
    ++killed;
    finish(run, "killed at checkpoint step " + std::to_string(step));
  }
  BOOST_TEST(killed >= at_least);  // 4 checkpoints of many steps each

  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> delay_ms(300, 2500);
  for (int i = 0; i < 6; ++i) {
    const int ms = delay_ms(rng);
    const std::string run = f.dir("random" + std::to_string(i));
    auto r = f.skein("--config " + config + " --run-dir " + run,
                   "timeout -s KILL " + std::to_string(ms / 1000.0) + " ");
    if (r.exit_code == 0) continue;  // finished before the kill
    finish(run, "killed after " + std::to_string(ms) + " ms");
  }
}

BOOST_AUTO_TEST_CASE(kill_9_while_checkpoints_are_written_never_loses_the_last_one) {
  kill_9_while_checkpoints_are_written(*this, false, 3, 15);
}

// The same while checkpoints are written in the background: a kill inside
// a write leaves the one before it complete.
BOOST_AUTO_TEST_CASE(kill_9_while_checkpoints_are_written_in_the_background_never_loses_the_last_one) {
  kill_9_while_checkpoints_are_written(*this, true, 5, 9);
}

// A checkpoint write on a full filesystem is one error line naming the
// checkpoint and "No space left on device", exit 1 (it ended in SIGABRT and
// a libtorch backtrace: torch's archive writer throws from its destructor);
// what it wrote is removed and the checkpoint before it resumes.
// `background`: the checkpoint written on its own thread; its failure is
// the run's at the next checkpoint (or the end of training).
void full_filesystem_checkpoint(Fixture& f, bool background) {
  if (!small_filesystems_available()) {
    BOOST_TEST_MESSAGE("no user and mount namespace here (unshare -rm): nothing to fill");
    return;
  }
  auto cfg = test::synthetic_config();
  cfg["model"]["hidden"] = {2048};  // each of model.pt, model_state_dict.pt, optimizer.pt ~170 KB
  cfg["max_epochs"] = 3;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
  cfg["checkpoint_background"] = background;
  const std::string config = f.write_config(cfg), small = f.dir("small"), out = f.dir("out");
  // 800 KB: the run's files and one checkpoint (~540 KB), not a second one.
  const auto train = on_small_filesystem(small, "800k",
                                         kSkein + " train --config " + config + " --run-dir " + small + "/run", out,
                                         "cp -a " + small + "/run " + out + "/run");
  check_full_disk_line(train, "checkpoint " + small + "/run/checkpoints/epoch_0002 could not be written");
  const std::string run = out + "/run";
  BOOST_TEST(fs::exists(run + "/checkpoints/epoch_0001/trainer.json"));
  for (fs::directory_iterator it(run + "/checkpoints"), end; it != end; ++it)
    BOOST_TEST(it->path().filename().string().rfind(".tmp-", 0) != 0u, it->path());
  const auto resumed = f.skein("--resume " + run);
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  BOOST_TEST(contains(resumed.out, "epoch_0001"), resumed.out);
  BOOST_TEST(load_json(run + "/history.json").size() == 3u);
}

BOOST_AUTO_TEST_CASE(a_checkpoint_on_a_full_filesystem_is_one_line_and_the_last_one_resumes) {
  full_filesystem_checkpoint(*this, false);
}

BOOST_AUTO_TEST_CASE(a_background_checkpoint_on_a_full_filesystem_is_one_line_and_the_last_one_resumes) {
  full_filesystem_checkpoint(*this, true);
}

// skein train --nproc-per-node keeps its store in $TMPDIR: a full one is one
// error line naming the store file, not "terminate called ... Aborted"
// (libtorch's FileStore writes in its destructor).
BOOST_AUTO_TEST_CASE(a_full_tmpdir_under_the_launcher_is_one_line) {
  if (!small_filesystems_available()) {
    BOOST_TEST_MESSAGE("no user and mount namespace here (unshare -rm): nothing to fill");
    return;
  }
  const std::string config = write_config(two_process_config()), small = dir("tmp"), out = dir("tmpout");
  const auto train = on_small_filesystem(small, "64k",
                                         "dd if=/dev/zero of=" + small + "/filler bs=4k count=100 2>/dev/null; TMPDIR=" +
                                             small + " " + kSkein + " train" + kProbe + "--config " + config +
                                             " --run-dir " + out + "/run --nproc-per-node 2 --timeout 30",
                                         out);
  check_full_disk_line(train, "cannot write the store file " + small + "/skein-rdzv-");
}

// The filestore history on a full filesystem: one error line naming its file
// (it aborted, or spun on the record its failed write left torn), exit 1,
// and the run resumes from its newest checkpoint with the store elsewhere.
BOOST_AUTO_TEST_CASE(a_filestore_history_on_a_full_filesystem_is_one_line_and_the_run_resumes) {
  if (!small_filesystems_available()) {
    BOOST_TEST_MESSAGE("no user and mount namespace here (unshare -rm): nothing to fill");
    return;
  }
  auto cfg = test::synthetic_config();
  cfg["max_epochs"] = 12;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
  const std::string config = write_config(cfg), small = dir("hist"), out = dir("histout");
  const std::string run = out + "/run";
  // One page: the store's records of a few epochs (~1 KB each), not of twelve.
  const auto train = on_small_filesystem(small, "4k",
                                         kSkein + " train --config " + config + " --run-dir " + run +
                                             " --allow-outside-run-dir --plugin filestore:path=" + small + "/h.store",
                                         out);
  check_full_disk_line(train, "cannot write the store file " + small + "/h.store");
  const long done = static_cast<long>(load_json(run + "/history.json").size());
  BOOST_TEST_REQUIRE(done >= 1);
  BOOST_TEST(done < 12);
  char newest[32];
  std::snprintf(newest, sizeof newest, "epoch_%04ld", done);
  BOOST_TEST(fs::exists(run + "/checkpoints/" + newest + "/trainer.json"), newest);
  const auto resumed = skein("--resume " + run + " --allow-outside-run-dir --set history.path=" + out + "/h2.store");
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  BOOST_TEST(load_json(run + "/history.json").size() == 12u);
}


BOOST_AUTO_TEST_SUITE_END()
