#include "skein/training/run/node_agent.hpp"

#include "skein/detail/run_files.hpp"
#include "skein/errors.hpp"
#include "skein/io/quoted.hpp"
#include "skein/training/checkpoint/checkpoint_dir.hpp"
#include "skein/training/run/run_dir.hpp"
#include "skein/training/run/run_env.hpp"
#include "skein/training/run/train_run.hpp"
#include "skein/training/store/quorum.hpp"
#include "skein/training/store/store_keys.hpp"

namespace skein::core {

NodeAgent::NodeAgent(NodeAgentOptions options) : options_(std::move(options)) {
  if (options_.nnodes == 1) return;
  const NodeAgentOptions& o = options_;
  try {
    rdzv_ = o.node_rank == 0 ? Rendezvous::tcp_server(o.master_port, o.world_size, o.timeout_s)
                             : Rendezvous::tcp_client(o.master_addr, o.master_port, o.world_size, o.timeout_s);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot " + std::string(o.node_rank == 0 ? "start" : "reach") + " the run's store at " +
                             capped(o.master_addr) + ":" + std::to_string(o.master_port) + ": " + first_line(e.what()));
  }
}

NodeAgent::~NodeAgent() = default;

int NodeAgent::store_port() const { return options_.node_rank == 0 ? rdzv_->port() : options_.master_port; }

void NodeAgent::use_file_store(const std::string& file, int users) {
  rdzv_.reset();
  rdzv_ = Rendezvous::file_store(file, users, options_.timeout_s);
}

std::string NodeAgent::agree_on_run_dir(const TrainRequest& request) {
  std::string run_dir = request.run_dir;
  if (options_.node_rank == 0) {
    if (run_dir.empty()) run_dir = new_run_dir("runs", request.sources.config_path);
    if (request.resume_dir.empty()) {
      recover_run_dir(run_dir);  // an --overwrite killed in its first epoch is undone first
      check_run_dir_usable(run_dir, request.overwrite);
    }
    rdzv_->publish(store_key::launcher_run_dir(), run_dir);
  } else if (run_dir.empty()) {
    run_dir = rdzv_->fetch(store_key::launcher_run_dir());
  }
  return run_dir;
}

int NodeAgent::agree_on_max_restarts(int mine) {
  const std::string key = store_key::launcher_max_restarts();
  if (options_.node_rank == 0) {
    rdzv_->publish(key, std::to_string(mine));
    return mine;
  }
  const int node0 = std::stoi(rdzv_->fetch(key));
  if (node0 != mine)
    skein::warn("node " + std::to_string(options_.node_rank) + " follows node 0's --max-restarts " +
                std::to_string(node0) + " (its own: " + std::to_string(mine) + ")");
  return node0;
}

Attempt NodeAgent::agree_on_attempt(int number, const TrainRequest& request, const std::string& run_dir) {
  Attempt a;
  a.number = number;
  const std::string key = store_key::launcher_attempt(number);
  if (options_.node_rank == 0) {
    a.run_id = random_run_id();
    a.resume = number == 0 ? !request.resume_dir.empty()
                           : !find_latest_checkpoint(run_files::path(run_dir, run_files::kCheckpoints)).empty();
    rdzv_->publish(key + "run_id", a.run_id);
    rdzv_->publish(key + "resume", a.resume ? "1" : "0");
    return a;
  }
  try {
    a.run_id = rdzv_->fetch(key + "run_id");
    a.resume = rdzv_->fetch(key + "resume") == "1";
  } catch (const std::exception& e) {
    throw std::runtime_error("node 0 did not start attempt " + std::to_string(number) +
                             " of the run within --timeout (its launcher stopped or died): " + first_line(e.what()));
  }
  return a;
}

TrainRequest NodeAgent::attempt_request(const TrainRequest& request, const Attempt& attempt,
                                        const std::string& run_dir) {
  TrainRequest req = request;
  if (attempt.resume) {
    req.resume_dir = run_dir;
    req.sources.config_path.clear();
    req.run_dir.clear();
    req.overwrite = false;
  } else {
    req.resume_dir.clear();
    req.run_dir = run_dir;
    // A restart without a checkpoint starts over, replacing the failed attempt.
    req.overwrite = request.overwrite || attempt.number > 0;
  }
  return req;
}

void NodeAgent::abandon() {
  if (rdzv_) rdzv_->abandon();
}

void NodeAgent::report_lost(const std::string& run_id, int id) { Quorum(rdzv_->store(), run_id, {}).report_lost(id); }

IntegrityReport NodeAgent::finish(const std::string& run_dir, const std::string& run_id, const nlohmann::json& launch) {
  IntegrityReport report = rdzv_->collect_digests(run_id, options_.world_size);
  report.write_run_json(run_dir, launch);
  return report;
}

}  // namespace skein::core
