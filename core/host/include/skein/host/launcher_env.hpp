#pragma once
// Which launcher started this process, and where the process stands in the
// run, read from that launcher's environment variables: skein train's and
// torchrun's (RANK, WORLD_SIZE, ...), Slurm's srun, Open MPI's mpirun and
// Kubeflow's PyTorchJob. Torch-free (libskein_host); the environment comes in
// as a lookup, so that tests need no setenv. docs/clusters.md lists what is
// read from each launcher.
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "skein/detail/export.hpp"

namespace skein::core {

enum class Launcher { none, skein, torchrun, slurm, openmpi, kubeflow };

// "none", "skein", "torchrun", "slurm", "openmpi", "kubeflow".
SKEIN_EXPORT const char* launcher_name(Launcher launcher);

struct LauncherEnv {
  Launcher launcher = Launcher::none;
  // For train.log: "slurm (job 1234, 4 tasks on 2 nodes)".
  std::string label = "none (a single process)";
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  int nnodes = 1;
  std::string master_addr;  // empty: not given (a single process, or skein's FileStore)
  // The variable that gave master_addr (MASTER_ADDR, PET_MASTER_ADDR,
  // SLURM_STEP_NODELIST, ...); empty when skein chose it.
  std::string master_addr_from;
  int master_port = 0;      // 0: not given
  // The launcher already serves the run's TCPStore (skein train on several
  // nodes, torchrun's static rendezvous): rank 0 connects instead of serving.
  bool agent_store = false;
  // The launcher's id of this attempt of the run, the same on every rank:
  // SKEIN_RUN_ID, or torchrun's TORCHELASTIC_RUN_ID and restart count. Empty:
  // rank 0 draws one.
  std::string run_id;
  // The attempt, TORCHELASTIC_RESTART_COUNT ("0" for the first, or when no
  // launcher restarts): set by skein train's launcher and torchrun; a
  // ConfigError unless a whole number from 0.
  std::string attempt = "0";
  // Kubeflow with PET_NPROC_PER_NODE > 1: this process stands for its pod,
  // which must start that many workers (skein train --nproc-per-node); 0 when
  // this process is a worker itself.
  int pod_processes = 0;
};

// A variable's value; nullopt when it is unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The launcher that started this process, the innermost when several are
// nested (skein train or torchrun inside an srun task: theirs). torchrun's
// variables set explicitly win over a cluster launcher's, and a value that
// disagrees with the cluster's is a ConfigError naming both variables, as is
// a malformed value (naming the variable), a master address too long for a
// host name among them (check_host_name; whether it resolves is checked
// where the store is opened: resolve_host).
SKEIN_EXPORT LauncherEnv read_launcher_env(const EnvLookup& env);
SKEIN_EXPORT LauncherEnv read_launcher_env(const std::map<std::string, std::string>& env);

// This process's environment.
SKEIN_EXPORT EnvLookup process_env();

// Lightning's rule for a Slurm job's master port (SLURMEnvironment): 15000
// plus the job id's last four digits, so every task of a job agrees on it
// without talking. Two jobs whose ids end alike collide on a shared node: set
// MASTER_PORT there.
SKEIN_EXPORT int slurm_master_port(long job_id);

// The longest timeout of a store wait or collective (--timeout,
// SKEIN_TIMEOUT_S), in seconds: 30 days. c10d and Gloo count it in
// milliseconds and add it to the clock, which a larger value overflows
// (Gloo's "Invalid timeout"); waits longer than this are none a run needs.
inline constexpr double kMaxTimeoutS = 30 * 24 * 3600;
// Throws ConfigError "WHAT: must be ..." unless 0 < seconds <= kMaxTimeoutS;
// WHAT names the setting and its value as given ("--timeout 1e+20").
SKEIN_EXPORT void check_timeout_s(double seconds, const std::string& what);

}  // namespace skein::core
