#include "launch.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/filesystem.hpp>

#include "skein/host/exit_codes.hpp"
#include "skein/host/failure_report.hpp"
#include "skein/host/host_address.hpp"
#include "skein/host/launcher_env.hpp"  // check_timeout_s
#include "skein/host/env_vars.hpp"
#include "skein/training/run/node_agent.hpp"
#include "skein/errors.hpp"
#include "skein/io/quoted.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/run.hpp"
#include "command_options.hpp"  // train_request_args
#include "worker_group.hpp"

namespace fs = boost::filesystem;

namespace skein::launcher {

namespace {

constexpr const char* kLauncherPidFile = "launcher.pid";

// Private directories of launchers that were killed (SIGKILL cannot be
// cleaned up after): removed by the next launcher of the same user.
void remove_stale_private_dirs(const fs::path& tmp) {
  boost::system::error_code ec;
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path dir = it->path();
    struct stat st {};
    if (dir.filename().string().rfind("skein-rdzv-", 0) != 0 || ::lstat(dir.c_str(), &st) != 0 ||
        !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
      continue;
    long pid = 0;
    std::ifstream((dir / kLauncherPidFile).string()) >> pid;
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      boost::system::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  }
}

// A directory only this user can enter, for the single-node FileStore.
struct PrivateDir {
  PrivateDir() {
    const fs::path tmp = fs::temp_directory_path();
    remove_stale_private_dirs(tmp);
    std::string tmpl = (tmp / "skein-rdzv-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a private temporary directory");
    path = tmpl;
    std::ofstream(path + "/" + kLauncherPidFile) << ::getpid() << "\n";
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

// The cores this process may run on (its affinity mask, as `nproc` counts).
int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

// How many workers a node and a run may have, checked before any starts
// (docs/distributed.md, "Launcher options"). Per node: kWorkersPerCore per
// usable core; beyond that the workers only take turns on the cores (each
// collective waits for the slowest), while each still loads libtorch. Per run:
// every worker keeps a connection to each of the others (Gloo's full mesh),
// so the world and a reserve for its own files must fit the open-file limit
// the workers inherit (ulimit -n).
constexpr int kWorkersPerCore = 8;
constexpr long long kFilesBesidesPeers = 64;

void check_worker_counts(const LaunchOptions& o) {
  const int cores = usable_cores();
  const long long per_node = static_cast<long long>(kWorkersPerCore) * cores;
  if (o.nproc_per_node > per_node)
    throw ConfigError("--nproc-per-node " + std::to_string(o.nproc_per_node) + ": at most " +
                      std::to_string(per_node) + " on this machine (" + std::to_string(kWorkersPerCore) +
                      " per CPU core, " + std::to_string(cores) + " core" + (cores == 1 ? "" : "s") +
                      " usable); more would only take turns on the cores");
  const long long world = static_cast<long long>(o.nnodes) * o.nproc_per_node;
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY) return;
  const long long most = static_cast<long long>(files.rlim_cur) - kFilesBesidesPeers;
  if (world > most)
    throw ConfigError("--nnodes " + std::to_string(o.nnodes) + " x --nproc-per-node " +
                      std::to_string(o.nproc_per_node) + " = " + std::to_string(world) +
                      " workers, each connected to every other: more than the open-file limit " +
                      std::to_string(files.rlim_cur) + " (ulimit -n) allows, at most " +
                      std::to_string(std::max(0LL, most)) + " workers; raise it with ulimit -n");
}

void validate(const LaunchOptions& o) {
  if (o.nproc_per_node < 1) throw ConfigError("--nproc-per-node must be at least 1");
  if (o.nnodes < 1) throw ConfigError("--nnodes must be at least 1");
  check_worker_counts(o);
  if (o.node_rank < 0 || o.node_rank >= o.nnodes)
    throw ConfigError("--node-rank must be in [0, " + std::to_string(o.nnodes) + ")");
  if (o.master_port < 0 || o.master_port > 65535) throw ConfigError("--master-port must be in [0, 65535]");
  if (o.nnodes > 1 && o.master_port == 0)
    throw ConfigError("--nnodes > 1 needs an explicit --master-port that every node uses");
  std::ostringstream timeout;
  timeout << "--timeout " << o.timeout_s;
  core::check_timeout_s(o.timeout_s, timeout.str());
  if (o.max_restarts < 0) throw ConfigError("--max-restarts must be >= 0");
  // Every node's workers reach node 0 there: a name that does not resolve
  // fails now, not after --timeout of retries.
  if (o.nnodes > 1) core::resolve_host(o.master_addr, o.master_addr_from);
}

// This node's workers for one attempt: `skein train` with the attempt's
// request, torchrun's variables and a failure report file.
std::vector<WorkerSpec> worker_specs(const LaunchOptions& o, const core::Attempt& attempt,
                                     const std::string& run_dir,
                                     const std::vector<std::pair<std::string, std::string>>& env,
                                     const std::string& private_dir) {
  const std::string exe = boost::dll::program_location().string();
  std::vector<WorkerSpec> workers;
  for (int local = 0; local < o.nproc_per_node; ++local) {
    WorkerSpec w;
    w.rank = o.node_rank * o.nproc_per_node + local;
    w.local_rank = local;
    w.argv = {exe, "train"};
    const std::vector<std::string> args = train_request_args(core::NodeAgent::attempt_request(o.request, attempt, run_dir));
    w.argv.insert(w.argv.end(), args.begin(), args.end());
    w.env = env;
    w.env.push_back({skein::env::kRank, std::to_string(w.rank)});
    w.env.push_back({skein::env::kLocalRank, std::to_string(local)});
    w.error_file = private_dir + "/error" + std::to_string(attempt.number) + "_rank" +
                   std::to_string(w.rank) + ".json";
    w.env.push_back({skein::env::kErrorFile, w.error_file});
    workers.push_back(std::move(w));
  }
  return workers;
}

std::string failure_line(const GroupResult& r) {
  return "skein: error: worker rank " + std::to_string(r.rank) + " on " + hostname() + " (pid " +
         std::to_string(r.pid) + ") failed at " + r.when + " with " +
         (r.signal ? "signal " + std::to_string(r.signal) + " (" + strsignal(r.signal) + ")"
                   : "exit code " + std::to_string(r.exit_code)) +
         (r.last_error_line.empty() ? "" : ": " + r.last_error_line);
}

// A line of the launcher's about an attempt (a worker's failure, a restart):
// on stderr, and appended to the run's train.log, so that the log says why
// it goes from an epoch to "Resumed from ...". One write of the whole line
// (O_APPEND) to a log the run already has: nothing is created, and a link,
// a FIFO or anything but a regular file is left alone.
void say_in_terminal_and_log(const std::string& run_dir, const std::string& line) {
  std::cerr << line << std::endl;
  if (run_dir.empty()) return;
  const std::string path = run_files::path(run_dir, run_files::kLog);
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  const std::string text = line + "\n";
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) (void)!::write(fd, text.data(), text.size());
  ::close(fd);
}

// After every worker of node 0 succeeded: compares the histories of all
// ranks and writes run.json. Other nodes have nothing more to do.
int finish_run(const LaunchOptions& o, const std::string& run_dir, const std::string& run_id, core::NodeAgent& agent) {
  if (o.node_rank != 0) return 0;
  const core::IntegrityReport report =
      agent.finish(run_dir, run_id, {{"run_id", run_id}, {"nnodes", o.nnodes}, {"nproc_per_node", o.nproc_per_node}});
  if (!report.consistent && !report.enforced) {
    skein::warn("ranks kept their own histories (the history backend does not synchronize ranks); they "
                "differ, as expected");
  } else if (!report.consistent) {
    std::cerr << "skein: error: integrity check failed: " << report.message << " (see " << run_dir
              << "/run.json)" << std::endl;
    return exit_code::kFailure;
  }
  return exit_code::kSuccess;
}

// The variables every worker gets in every attempt (torchrun's names).
std::vector<std::pair<std::string, std::string>> common_env(const LaunchOptions& o, int world) {
  std::vector<std::pair<std::string, std::string>> env = {
      {skein::env::kWorldSize, std::to_string(world)},
      {skein::env::kLocalWorldSize, std::to_string(o.nproc_per_node)},
      {skein::env::kMasterAddr, o.master_addr},
      {skein::env::kLaunched, "1"},
      {skein::env::kTimeout, std::to_string(o.timeout_s)},
  };
  if (!std::getenv(skein::env::kOmpThreads)) env.push_back({skein::env::kOmpThreads, "1"});
  return env;
}

// Reports a failed attempt. The launcher's exit code when it gives up, or
// nullopt when attempt `number` is followed by a restart.
std::optional<int> after_failure(const GroupResult& result, int number, int max_restarts,
                                 const std::string& run_dir) {
  // A worker's config error stays a config error, and a restart cannot mend
  // it; the run did not start, so its log (a run being resumed) is left alone.
  if (result.exit_code == exit_code::kConfig) {
    std::cerr << failure_line(result) << std::endl;
    return exit_code::kConfig;
  }
  say_in_terminal_and_log(run_dir, failure_line(result));
  if (number >= max_restarts) {
    if (max_restarts > 0)
      say_in_terminal_and_log(run_dir, "skein: error: giving up after " + std::to_string(max_restarts) + " restart" +
                                           (max_restarts == 1 ? "" : "s") + " (--max-restarts)");
    return exit_code::kFailure;
  }
  say_in_terminal_and_log(run_dir, "skein: restarting all workers (restart " + std::to_string(number + 1) + " of " +
                                       std::to_string(max_restarts) + ")");
  return std::nullopt;
}

// Live recovery: a worker killed by a signal (it reported nothing) is lost;
// the others are told at once (they would find out within their collective
// timeout) and go on, and a replacement joins them while restarts are left.
struct LiveLoss {
  core::NodeAgent& agent;
  const std::string& run_id;
  const std::vector<WorkerSpec>& workers;  // the attempt's
  const std::string& run_dir;
  int restarts_left;
  int& replaced;
};

AfterLoss after_lost_worker(const LostWorker& lost, const LiveLoss& live) {
  AfterLoss after;
  // Not the store: a worker killed inside a write leaves it torn.
  const int id = core::reported_live_id(lost.error_file);
  if (id < 0) return after;  // not (yet) in live recovery: stop all
  live.agent.report_lost(live.run_id, id);
  after.go_on = true;
  std::string line = "skein: worker rank " + std::to_string(lost.rank) + " on " + hostname() + " (pid " +
                     std::to_string(lost.pid) + ") was lost (signal " + std::to_string(lost.signal) + ", " +
                     strsignal(lost.signal) + "); the others go on (live recovery)";
  if (live.replaced >= live.restarts_left) {
    say_in_terminal_and_log(live.run_dir, line + ", no restart left for a replacement (--max-restarts)");
    return after;
  }
  ++live.replaced;
  WorkerSpec spec = live.workers.front();
  spec.rank = live.workers.back().rank + live.replaced;  // a label for its output: its rank comes later
  spec.env.push_back({skein::env::kLiveJoin, "1"});
  spec.error_file = spec.error_file + ".replacement" + std::to_string(live.replaced);
  for (auto& [name, value] : spec.env)
    if (name == skein::env::kErrorFile) value = spec.error_file;
  say_in_terminal_and_log(live.run_dir, line + "; replacement " + std::to_string(live.replaced) + " joins as [rank " +
                                            std::to_string(spec.rank) + "] (restart " + std::to_string(live.replaced) +
                                            " of --max-restarts)");
  after.spec = std::move(spec);
  return after;
}

}  // namespace

int launch(const LaunchOptions& o) {
  validate(o);
  const int world = o.nnodes * o.nproc_per_node;
  const bool multi_node = o.nnodes > 1;

  // Private: the single-node store and the workers' failure reports.
  PrivateDir private_dir;
  std::vector<std::pair<std::string, std::string>> env = common_env(o, world);
  core::NodeAgentOptions agent_options;
  agent_options.node_rank = o.node_rank;
  agent_options.nnodes = o.nnodes;
  agent_options.world_size = world;
  agent_options.master_addr = o.master_addr;
  agent_options.master_port = o.master_port;
  agent_options.timeout_s = o.timeout_s;
  core::NodeAgent agent(agent_options);
  if (multi_node) {
    env.push_back({skein::env::kMasterPort, std::to_string(agent.store_port())});
    env.push_back({skein::env::kAgentStore, "1"});
  } else {
    env.push_back({skein::env::kMasterPort, std::to_string(o.master_port ? o.master_port : 29500)});
  }

  std::string run_dir = o.request.run_dir;
  int max_restarts = o.max_restarts;
  int replaced = 0;  // workers replaced live (live recovery), counted with the restarts
  for (int number = 0;; ++number) {
    std::vector<std::pair<std::string, std::string>> attempt_env = env;
    if (!multi_node) {
      // One machine: a FileStore in a private directory opens no port; a new
      // one each attempt, as the workers of a failed one left theirs unbalanced.
      const std::string file = private_dir.path + "/store" + std::to_string(number);
      agent.use_file_store(file, world + 1);
      attempt_env.push_back({skein::env::kStoreFile, file});
      attempt_env.push_back({skein::env::kStoreUsers, std::to_string(world + 1)});
    }
    if (number == 0) {
      run_dir = agent.agree_on_run_dir(o.request);
      if (multi_node) max_restarts = agent.agree_on_max_restarts(o.max_restarts);
    }
    const core::Attempt attempt = agent.agree_on_attempt(number, o.request, run_dir);
    attempt_env.push_back({skein::env::kRunId, attempt.run_id});
    attempt_env.push_back({skein::env::kRestartCount, std::to_string(attempt.number)});
    attempt_env.push_back({skein::env::kMaxRestarts, std::to_string(max_restarts)});

    const std::vector<WorkerSpec> workers =
        worker_specs(o, attempt, run_dir, attempt_env, private_dir.path);
    GroupOptions group;
    group.quiet_ranks = o.quiet_ranks;
    group.on_lost = [&](const LostWorker& lost) {
      return after_lost_worker(lost, {agent, attempt.run_id, workers, run_dir, max_restarts - number, replaced});
    };
    const GroupResult result = run_workers(workers, group);
    // Every worker has ended; one killed mid-write may have torn the store's last record.
    if (result.interrupted || result.failed) agent.abandon();

    if (result.interrupted) {
      std::cerr << "skein: error: interrupted at " << result.when << "; all workers stopped" << std::endl;
      return exit_code::kFailure;
    }
    if (!result.failed) return finish_run(o, run_dir, attempt.run_id, agent);
    if (const auto code = after_failure(result, number + replaced, max_restarts, run_dir)) return *code;
  }
}

}  // namespace skein::launcher
