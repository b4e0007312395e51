#pragma once
// What a node's launcher (launcher/commands/launch.cpp) settles with the
// other nodes through the run's store, node 0 deciding and the others
// learning it: the run directory, --max-restarts, how each attempt starts
// (a fresh run id; resumed from the newest checkpoint or not), and at the
// end every rank's history digest for run.json. The one header of training
// the launcher's node agent includes; the store keys and the run directory's
// rules stay here.
#include <memory>
#include <string>

#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"
#include "skein/host/train_request.hpp"
#include "skein/training/store/rendezvous.hpp"  // IntegrityReport

namespace skein::core {

struct NodeAgentOptions {
  int node_rank = 0;
  int nnodes = 1;
  int world_size = 1;        // every worker of every node
  std::string master_addr;   // several nodes: node 0's address
  int master_port = 0;       // several nodes: node 0's port (node 0: 0 = any free)
  double timeout_s = 0;      // every wait on the store
};

// One attempt of the run (torchrun's restart count).
struct Attempt {
  int number = 0;
  std::string run_id;   // fresh each attempt: keeps their store keys apart
  bool resume = false;  // continue from the run directory's newest checkpoint
};

class SKEIN_EXPORT NodeAgent {
 public:
  // Several nodes: serves (node 0) or reaches the run's TCPStore, which
  // outlives every worker and restart; one node: no store until
  // use_file_store. Throws std::runtime_error naming the address.
  explicit NodeAgent(NodeAgentOptions options);
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  // The TCPStore's port (several nodes), for the workers' MASTER_PORT.
  int store_port() const;
  // One node: a FileStore at `file` shared by `users` processes (opens no
  // port), replacing the previous attempt's.
  void use_file_store(const std::string& file, int users);

  // Node 0 names the run directory (checked usable unless resuming) and the
  // others learn it, unless they were given it.
  std::string agree_on_run_dir(const TrainRequest& request);
  // Node 0's --max-restarts for every node (a warning where a node's differs).
  int agree_on_max_restarts(int mine);
  // How attempt `number` starts, decided by node 0.
  Attempt agree_on_attempt(int number, const TrainRequest& request, const std::string& run_dir);
  // What an attempt's workers are asked: `request`, started in `run_dir` or
  // continued from its newest checkpoint.
  static TrainRequest attempt_request(const TrainRequest& request, const Attempt& attempt,
                                      const std::string& run_dir);
  // Live recovery (engine/live_recovery.hpp): tells attempt `run_id`'s
  // workers that the one with id `id` is gone (they stop waiting for it).
  void report_lost(const std::string& run_id, int id);
  // After a failed attempt, before the next store: see Rendezvous::abandon.
  void abandon();
  // Node 0, every worker done: compares the ranks' histories and writes
  // run.json with `launch` beside the report.
  IntegrityReport finish(const std::string& run_dir, const std::string& run_id, const nlohmann::json& launch);

 private:
  NodeAgentOptions options_;
  std::unique_ptr<Rendezvous> rdzv_;
};

}  // namespace skein::core
