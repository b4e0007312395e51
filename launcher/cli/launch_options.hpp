#pragma once
// What `skein train` asks the launcher for: processes per node, nodes, the
// rendezvous, restarts, and the workers' arguments. Parsed by the torch-free
// command line (cli/), carried out by libskein_commands (commands/launch.hpp).
#include <string>

#include "skein/host/train_request.hpp"

namespace skein::launcher {

struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  std::string master_addr_from = "--master-addr";  // what gave it, for errors
  int master_port = 0;  // 0: any free port (one node only)
  bool quiet_ranks = false;
  double timeout_s = 300;  // every store wait and collective in the workers
  int max_restarts = 0;    // torchrun's --max-restarts: restarts of the whole group
  // What the workers are asked for (train_request_args, cli/command_options.hpp),
  // as parsed: its run_dir (empty: node 0 picks one), resume_dir (the run to
  // continue) and overwrite (the first attempt may replace a run in run_dir)
  // are the launcher's to settle for each attempt.
  core::TrainRequest request;
};

}  // namespace skein::launcher
