#pragma once
// What `skein train` asks the launcher for: processes per node, nodes, the
// rendezvous, restarts, and the workers' arguments. Parsed by the torch-free
// command line (cli/), carried out by libskein_commands (commands/launch.hpp).
#include <string>
#include <vector>

namespace skein::launcher {

struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: any free port (one node only)
  bool quiet_ranks = false;
  double timeout_s = 300;  // every store wait and collective in the workers
  std::string run_dir;     // empty: node 0 picks one
  bool resume = false;     // run_dir holds the run to continue
  bool overwrite = false;  // the first attempt may replace a run in run_dir
  std::string config_path; // names the default run directory
  int max_restarts = 0;    // torchrun's --max-restarts: restarts of the whole group
  // The workers' arguments after "skein train", without launcher flags:
  // how the first attempt starts (--config ... or --resume DIR) ...
  std::vector<std::string> start_args;
  // ... and what every attempt repeats (--plugin, --set, --plugin-dir).
  std::vector<std::string> common_args;
};

}  // namespace skein::launcher
