#pragma once
// Runs this node's worker processes: spawns them with torchrun's environment,
// relays their output ([rank N] prefixes), and stops them all when one fails.
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace skein::launcher {

struct WorkerSpec {
  int rank = 0;
  int local_rank = 0;
  std::vector<std::string> argv;                          // argv[0] is the program
  std::vector<std::pair<std::string, std::string>> env;  // added to this process's environment
  std::string error_file;  // where the worker reports its failure (SKEIN_ERROR_FILE)
};

// A worker killed by a signal (it reported nothing) in a run with live
// recovery: what the others do. `spec` set: it is started in the lost one's
// place (its rank a new label for its output); `go_on` without it: the
// others go on without it; neither: the group stops, as for any failure.
struct LostWorker {
  int rank = 0;
  int pid = 0;
  int signal = 0;
  std::string error_file;  // its WorkerSpec's
};
struct AfterLoss {
  bool go_on = false;
  std::optional<WorkerSpec> spec;
};

struct GroupOptions {
  bool quiet_ranks = false;  // drop the stdout of ranks other than 0
  double grace_s = 5;        // SIGTERM, then SIGKILL after this long
  std::function<AfterLoss(const LostWorker&)> on_lost;  // null: every failure stops the group
};

// The first worker that failed, if any.
struct GroupResult {
  bool failed = false;
  bool interrupted = false;  // the launcher itself got SIGINT/SIGTERM
  int rank = -1;
  int pid = 0;
  int exit_code = 0;  // when it exited
  int signal = 0;     // when a signal ended it
  std::string last_error_line;
  std::string when;  // local time of the failure
};

// Blocks until every worker has ended; never leaves one running.
GroupResult run_workers(const std::vector<WorkerSpec>& workers, const GroupOptions& options);

}  // namespace skein::launcher
