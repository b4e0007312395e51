#pragma once
// Runs this node's worker processes: spawns them with torchrun's environment,
// relays their output ([rank N] prefixes), and stops them all when one fails.
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

struct GroupOptions {
  bool quiet_ranks = false;  // drop the stdout of ranks other than 0
  double grace_s = 5;        // SIGTERM, then SIGKILL after this long
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
