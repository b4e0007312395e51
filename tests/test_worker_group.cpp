#define BOOST_TEST_MODULE worker_group
#include <boost/test/unit_test.hpp>

#include "test_support.hpp"
#include "worker_group.hpp"

// The launcher's worker group driven with stand-in workers (/bin/sh scripts),
// so that the order in which workers report, exit and get stopped is set by
// the test, not left to timing.

namespace {

using skein::launcher::GroupOptions;
using skein::launcher::GroupResult;
using skein::launcher::WorkerSpec;

struct Fixture {
  test::TempDir tmp;

  WorkerSpec worker(int rank, const std::string& script) const {
    WorkerSpec w;
    w.rank = rank;
    w.local_rank = rank;
    w.argv = {"/bin/sh", "-c", script};
    w.error_file = error_file(rank);
    return w;
  }
  std::string error_file(int rank) const { return tmp.str("error" + std::to_string(rank) + ".json"); }
  // Shell that writes a failure report the way core::report_failure does
  // (atomically: a rename), with the given time and exit code.
  std::string report(int rank, long long time_us, int exit_code, const std::string& message) const {
    const std::string f = error_file(rank);
    return "printf '%s' '{\"rank\": " + std::to_string(rank) + ", \"time_us\": " + std::to_string(time_us) +
           ", \"message\": \"" + message + "\", \"exit_code\": " + std::to_string(exit_code) + "}' > " + f +
           ".tmp && mv " + f + ".tmp " + f;
  }
};

GroupResult run(const std::vector<WorkerSpec>& workers) {
  GroupOptions options;
  options.grace_s = 30;  // SIGTERM ends every stand-in at once; SIGKILL is never needed
  return skein::launcher::run_workers(workers, options);
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(worker_group, Fixture)

BOOST_AUTO_TEST_CASE(every_worker_succeeds) {
  auto r = run({worker(0, "exit 0"), worker(1, "exit 0")});
  BOOST_TEST(!r.failed);
  BOOST_TEST(!r.interrupted);
}

// Rank 1 reports `first` at time 1000 with `code`, then runs `rank1_then`;
// rank 0 waits for that report, reports "second" at time 2000 and exits 1.
GroupResult rank1_reports_first(Fixture& f, int code, const std::string& rank1_then) {
  return run({f.worker(0, "while [ ! -e " + f.error_file(1) + " ]; do sleep 0.01; done; " +
                              f.report(0, 2000, 1, "second") + "; exit 1"),
              f.worker(1, f.report(1, 1000, code, "first") + "; " + rank1_then)});
}

// The race CI met: rank 1 reports a config error first, rank 0 fails later,
// and the launcher's SIGTERM ends rank 1 before it exits. The root cause is
// rank 1's report, with its exit code, not the signal the launcher sent.
BOOST_AUTO_TEST_CASE(a_worker_stopped_after_reporting_keeps_its_exit_code) {
  auto r = rank1_reports_first(*this, 2, "exec sleep 600");
  BOOST_TEST(r.failed);
  BOOST_TEST(r.rank == 1);
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(r.signal == 0);
  BOOST_TEST(r.last_error_line == "first");
}

BOOST_AUTO_TEST_CASE(the_earliest_report_is_the_root_cause) {
  // Rank 1's report is older, though rank 0 may be reaped first.
  auto r = rank1_reports_first(*this, 3, "exit 3");
  BOOST_TEST(r.failed);
  BOOST_TEST(r.rank == 1);
  BOOST_TEST(r.exit_code == 3);
  BOOST_TEST(r.last_error_line == "first");
}

BOOST_AUTO_TEST_CASE(a_worker_killed_by_a_signal_is_the_root_cause) {
  auto r = run({worker(0, "kill -KILL $$"), worker(1, "exec sleep 600")});
  BOOST_TEST(r.failed);
  BOOST_TEST(r.rank == 0);
  BOOST_TEST(r.signal == 9);
}

BOOST_AUTO_TEST_CASE(a_worker_that_reports_nothing_is_named_with_its_last_error_line) {
  auto r = run({worker(0, "exec sleep 600"), worker(1, "echo 'something broke' >&2; exit 3")});
  BOOST_TEST(r.failed);
  BOOST_TEST(r.rank == 1);
  BOOST_TEST(r.exit_code == 3);
  BOOST_TEST(r.signal == 0);
  BOOST_TEST(r.last_error_line == "something broke");
}

// A peer's line as Gloo 2.x words a lost connection, wrapped by ddp: the
// launcher's line keeps the error and drops Gloo's advice and sign-off
// (issue 48), from a report and from a last stderr line alike.
BOOST_AUTO_TEST_CASE(gloos_advice_is_dropped_from_the_line_a_worker_failed_with) {
  const std::string gloo =
      "ddp: gradient all-reduce failed: a peer died or did not answer within the run's timeout "
      "([../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:4242. "
      "This is typically caused by a remote worker crashing. Check the logs of the remote worker before "
      "reporting an error. GLHF! \xf0\x9f\x8f\x96\xef\xb8\x8f)";
  const std::string expected =
      "ddp: gradient all-reduce failed: a peer died or did not answer within the run's timeout "
      "([../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:4242.)";
  const nlohmann::json record = {{"rank", 1}, {"time_us", 1000}, {"message", gloo}, {"exit_code", 1}};
  test::write_text(tmp.str("record.json"), record.dump());
  auto reported = run({worker(0, "exec sleep 600"), worker(1, "mv " + tmp.str("record.json") + " " + error_file(1) + "; exit 1")});
  BOOST_TEST(reported.rank == 1);
  BOOST_TEST(reported.last_error_line == expected);
  auto printed = run({worker(0, "exec sleep 600"), worker(1, "printf '%b\\n' \"" + gloo + "\" >&2; exit 1")});
  BOOST_TEST(printed.rank == 1);
  BOOST_TEST(printed.last_error_line == expected);
}

BOOST_AUTO_TEST_SUITE_END()
