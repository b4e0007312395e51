#define BOOST_TEST_MODULE torchrun
#include <boost/test/unit_test.hpp>

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

BOOST_AUTO_TEST_SUITE_END()
