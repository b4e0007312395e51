#include "launch.hpp"

#include <unistd.h>

#include <iostream>

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/filesystem.hpp>

#include "skein/atomic_file.hpp"
#include "skein/core/rendezvous.hpp"
#include "skein/core/run.hpp"
#include "skein/core/run_env.hpp"
#include "skein/errors.hpp"
#include "worker_group.hpp"

namespace fs = boost::filesystem;

namespace skein::launcher {

namespace {

// A directory only this user can enter, for the single-node FileStore.
struct PrivateDir {
  PrivateDir() {
    std::string tmpl = (fs::temp_directory_path() / "skein-rdzv-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a private temporary directory");
    path = tmpl;
  }
  ~PrivateDir() {
    boost::system::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

std::string hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

void validate(const LaunchOptions& o) {
  if (o.nproc_per_node < 1) throw ConfigError("--nproc-per-node must be at least 1");
  if (o.nnodes < 1) throw ConfigError("--nnodes must be at least 1");
  if (o.node_rank < 0 || o.node_rank >= o.nnodes)
    throw ConfigError("--node-rank must be in [0, " + std::to_string(o.nnodes) + ")");
  if (o.master_port < 0 || o.master_port > 65535) throw ConfigError("--master-port must be in [0, 65535]");
  if (o.nnodes > 1 && o.master_port == 0)
    throw ConfigError("--nnodes > 1 needs an explicit --master-port that every node uses");
  if (!(o.timeout_s > 0)) throw ConfigError("--timeout must be positive");
}

}  // namespace

int launch(const LaunchOptions& o) {
  validate(o);
  const int world = o.nnodes * o.nproc_per_node;
  const bool multi_node = o.nnodes > 1;

  // The run's store, hosted here so that it outlives every worker.
  // Private: the single-node store and the workers' failure reports.
  PrivateDir private_dir;
  std::unique_ptr<core::Rendezvous> rdzv;
  std::vector<std::pair<std::string, std::string>> env = {
      {"WORLD_SIZE", std::to_string(world)},
      {"LOCAL_WORLD_SIZE", std::to_string(o.nproc_per_node)},
      {"MASTER_ADDR", o.master_addr},
      {core::kEnvLaunched, "1"},
      {core::kEnvTimeout, std::to_string(o.timeout_s)},
  };
  if (!std::getenv("OMP_NUM_THREADS")) env.push_back({"OMP_NUM_THREADS", "1"});
  std::string run_dir = o.run_dir;
  std::string run_id;
  try {
    if (!multi_node) {
      // One machine: a FileStore in a private directory opens no port.
      const std::string file = private_dir.path + "/store";
      rdzv = core::Rendezvous::file_store(file, world + 1, o.timeout_s);
      env.push_back({core::kEnvStoreFile, file});
      env.push_back({core::kEnvStoreUsers, std::to_string(world + 1)});
      env.push_back({"MASTER_PORT", std::to_string(o.master_port ? o.master_port : 29500)});
    } else if (o.node_rank == 0) {
      rdzv = core::Rendezvous::tcp_server(o.master_port, world, o.timeout_s);
      env.push_back({"MASTER_PORT", std::to_string(rdzv->port())});
      env.push_back({core::kEnvAgentStore, "1"});
    } else {
      rdzv = core::Rendezvous::tcp_client(o.master_addr, o.master_port, world, o.timeout_s);
      env.push_back({"MASTER_PORT", std::to_string(o.master_port)});
      env.push_back({core::kEnvAgentStore, "1"});
    }
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot " + std::string(o.node_rank == 0 ? "start" : "reach") +
                             " the run's store at " + o.master_addr + ":" +
                             std::to_string(o.master_port) + ": " + first_line(e.what()));
  }

  // Node 0 names the run (id and directory); the other nodes learn both.
  if (o.node_rank == 0) {
    run_id = core::random_run_id();
    if (run_dir.empty()) run_dir = core::new_run_dir("runs", o.config_path);
    if (!o.resume) core::check_run_dir_free(run_dir);
    rdzv->publish("skein/launcher/run_id", run_id);
    rdzv->publish("skein/launcher/run_dir", run_dir);
  } else {
    run_id = rdzv->fetch("skein/launcher/run_id");
    if (run_dir.empty()) run_dir = rdzv->fetch("skein/launcher/run_dir");
  }
  env.push_back({core::kEnvRunId, run_id});

  const std::string exe = boost::dll::program_location().string();
  std::vector<WorkerSpec> workers;
  for (int local = 0; local < o.nproc_per_node; ++local) {
    WorkerSpec w;
    w.rank = o.node_rank * o.nproc_per_node + local;
    w.local_rank = local;
    w.argv = {exe, "train"};
    w.argv.insert(w.argv.end(), o.worker_args.begin(), o.worker_args.end());
    if (!o.resume) w.argv.insert(w.argv.end(), {"--run-dir", run_dir});
    w.env = env;
    w.env.push_back({"RANK", std::to_string(w.rank)});
    w.env.push_back({"LOCAL_RANK", std::to_string(local)});
    w.error_file = private_dir.path + "/error_rank" + std::to_string(w.rank) + ".json";
    w.env.push_back({core::kEnvErrorFile, w.error_file});
    workers.push_back(std::move(w));
  }
  GroupOptions group;
  group.quiet_ranks = o.quiet_ranks;
  GroupResult result = run_workers(workers, group);

  if (result.interrupted) {
    std::cerr << "skein: error: interrupted at " << result.when << "; all workers stopped" << std::endl;
    return 1;
  }
  if (result.failed) {
    std::cerr << "skein: error: worker rank " << result.rank << " on " << hostname() << " (pid "
              << result.pid << ") failed at " << result.when << " with "
              << (result.signal ? "signal " + std::to_string(result.signal)
                                : "exit code " + std::to_string(result.exit_code))
              << (result.last_error_line.empty() ? "" : ": " + result.last_error_line) << std::endl;
    return result.exit_code == 2 ? 2 : 1;  // a worker's config error stays a config error
  }
  if (o.node_rank != 0) return 0;
  // Every rank published a digest of its history: they must all agree.
  core::IntegrityReport report = rdzv->collect_digests(world);
  nlohmann::json run_json = report.to_json();
  run_json["run_id"] = run_id;
  run_json["nnodes"] = o.nnodes;
  run_json["nproc_per_node"] = o.nproc_per_node;
  write_file_atomic(run_dir + "/run.json", run_json.dump(2) + "\n");
  if (!report.consistent && !report.enforced) {
    std::cerr << "skein: warning: ranks kept their own histories (history 'local'); they differ, "
                 "as expected without a synchronizing history backend" << std::endl;
  } else if (!report.consistent) {
    std::cerr << "skein: error: integrity check failed: " << report.message << " (see " << run_dir
              << "/run.json)" << std::endl;
    return 1;
  }
  return 0;
}

}  // namespace skein::launcher
