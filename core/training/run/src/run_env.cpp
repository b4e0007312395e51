#include "skein/training/run/run_env.hpp"

#include <cerrno>
#include <cstdlib>
#include <random>
#include <sstream>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "skein/host/env_vars.hpp"
#include "skein/host/host_address.hpp"
#include "skein/io/quoted.hpp"
#include "skein/errors.hpp"
#include "skein/training/run/from_main.hpp"
#include "skein/training/store/store_keys.hpp"
#include "skein/io/store.hpp"

namespace skein::core {

namespace {

const char* env_value(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

long env_int(const char* name, long fallback, long min, long max) {
  const char* v = env_value(name);
  if (!v) return fallback;
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0')
    throw ConfigError(std::string("environment variable ") + name + "='" + v + "' is not an integer");
  if (x < min || x > max)
    throw ConfigError(std::string("environment variable ") + name + "=" + v + " is out of range [" +
                      std::to_string(min) + ", " + std::to_string(max) + "]");
  return x;
}

}  // namespace

bool launched_by_skein() {
  const char* v = env_value(env::kLaunched);
  return v && std::string(v) == "1";
}

bool live_join_requested(RunInfo& run, const LauncherEnv& launcher) {
  const char* v = env_value(env::kLiveJoin);
  // A replica group's worker restarted by its torchrun joins too.
  const bool restarted_in_group = env_value(env::kReplicaGroups) && launcher.attempt != "0";
  if ((!v || std::string(v) != "1") && !restarted_in_group) return false;
  if (run.world_size < 2)
    throw ConfigError(std::string(env::kLiveJoin) + "=1 (a replacement that joins a live run) needs WORLD_SIZE of "
                      "2 or more; it is " + std::to_string(run.world_size));
  run.rank = 1;  // until taken in: a rank other than 0 (see run_env.hpp)
  return true;
}

std::string random_run_id() {
  std::random_device rd;
  std::ostringstream s;
  s << std::hex << ((static_cast<std::uint64_t>(rd()) << 32) | rd());
  return s.str();
}

namespace {

// Live recovery under torchrun (docs/distributed.md, "Live recovery"): one
// torchrun per replica group, each with its own rendezvous, so that its
// agent restarts only its own workers; the groups meet in the FileStore
// SKEIN_STORE_FILE names, which outlives them all, under the run id
// SKEIN_RUN_ID. Ranks: group x the group's workers + LOCAL_RANK.
void apply_replica_groups(RunInfo& run) {
  if (!env_value(env::kReplicaGroups)) return;
  const long groups = env_int(env::kReplicaGroups, 1, 1, 1 << 16);
  if (!env_value(env::kReplicaGroup))
    throw ConfigError(std::string(env::kReplicaGroups) + " is set: " + env::kReplicaGroup +
                      " (this group's index, from 0) must be too");
  const long group = env_int(env::kReplicaGroup, 0, 0, groups - 1);
  if (!env_value(env::kStoreFile) || !env_value(env::kRunId))
    throw ConfigError(std::string(env::kReplicaGroups) + " is set: the groups meet in the FileStore " +
                      env::kStoreFile + " names under the run id " + env::kRunId + "; set both");
  run.rank = static_cast<int>(group) * run.local_world_size + run.local_rank;
  run.world_size = static_cast<int>(groups) * run.local_world_size;
  run.multi_node = false;  // one machine (a group per node: ddp's gloo_host)
}

}  // namespace

RunInfo read_run_env(const LauncherEnv& launcher) {
  RunInfo run;
  if (const char* t = env_value(env::kTimeout)) {
    char* end = nullptr;
    run.timeout_s = std::strtod(t, &end);
    if (*end != '\0') run.timeout_s = 0;  // refused below, naming the text
    check_timeout_s(run.timeout_s, std::string("environment variable ") + env::kTimeout + "='" + t + "'");
  }
  if (launcher.pod_processes > 0) {
    const std::string n = std::to_string(launcher.pod_processes);
    throw ConfigError("environment variable PET_NPROC_PER_NODE=" + n + ": this pod must start " + n +
                      " workers: run skein train --nproc-per-node " + n +
                      " in it (the pod's PET_NNODES, PET_NODE_RANK, MASTER_ADDR and MASTER_PORT give the rest)");
  }
  if (launcher.launcher == Launcher::none) return run;
  run.world_size = launcher.world_size;
  run.rank = launcher.rank;
  run.local_world_size = launcher.local_world_size;
  run.local_rank = launcher.local_rank;
  run.multi_node = run.local_world_size < run.world_size;
  run.master_addr = launcher.master_addr;
  run.master_port = launcher.master_port;
  if (run.world_size > 1 && !env_value(env::kStoreFile) && (run.master_addr.empty() || run.master_port == 0))
    throw ConfigError("WORLD_SIZE=" + std::to_string(run.world_size) +
                      " needs MASTER_ADDR and MASTER_PORT (or start the run with skein train "
                      "--nproc-per-node)");
  run.run_id = launcher.run_id;
  apply_replica_groups(run);
  return run;
}

RunStore open_run_store(RunInfo& run, const LauncherEnv& launcher) {
  RunStore rs;
  const auto timeout = to_millis(run.timeout_s);
  try {
    if (const char* path = env_value(env::kStoreFile)) {
      const int users = static_cast<int>(env_int(env::kStoreUsers, run.world_size, 1, 1 << 20));
      rs.kind = RunStore::Kind::file;
      rs.store = open_file_store(path, users, run.timeout_s);
    } else if (run.world_size > 1 || (!run.master_addr.empty() && run.master_port > 0)) {
      // Every rank, rank 0 too, connects to the address (libtorch's TCPStore
      // would retry a name it cannot resolve until the timeout).
      resolve_host(run.master_addr,
                   "environment variable " + (launcher.master_addr_from.empty() ? std::string(env::kMasterAddr)
                                                                              : launcher.master_addr_from));
      const bool serve = run.rank == 0 && !launcher.agent_store;
      rs.kind = RunStore::Kind::tcp;
      rs.store = c10::make_intrusive<c10d::TCPStore>(
          run.master_addr, tcp_store_options(run.master_port, serve, run.world_size, run.timeout_s));
      if (launcher.agent_store && launcher.launcher == Launcher::torchrun) {
        // Where torchrun's own workers keep their keys in its agent's store,
        // which outlives every attempt: one prefix per attempt, so a
        // restarted attempt never reads the last one's (run dir, run id).
        rs.store->setTimeout(timeout);
        rs.store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + launcher.attempt, rs.store);
      }
    }
  } catch (const ConfigError&) {
    throw;  // names its culprit
  } catch (const std::exception& e) {
    std::string where = env_value(env::kStoreFile) ? std::string(env_value(env::kStoreFile))
                                           : capped(run.master_addr) + ":" + std::to_string(run.master_port);
    throw std::runtime_error("rank " + std::to_string(run.rank) + ": cannot open the run's store at " +
                             where + ": " + first_line(e.what()));
  }
  if (rs.store) rs.store->setTimeout(timeout);
  // torchrun's elastic agents count restarts each on its own (a node that
  // joins later starts at 0), so the ids they give may differ: rank 0's is
  // the run's. Its workers' own store is new in every rendezvous round.
  const bool agents_may_differ = launcher.launcher == Launcher::torchrun && !launcher.agent_store;
  if (run.run_id.empty() || (agents_may_differ && rs.store && run.world_size > 1)) {
    if (run.is_main() && run.run_id.empty()) run.run_id = random_run_id();
    run.run_id = from_main(rs, run, store_key::run_id(), run.run_id);
  }
  return rs;
}

}  // namespace skein::core
