#pragma once
// Where this process stands in a run: its launcher's environment variables,
// and the run's store.
#include "skein/host/launcher_env.hpp"
#include "skein/detail/export.hpp"
#include "skein/run.hpp"
#include "skein/run_store.hpp"

namespace skein::core {

// The variables' names: skein/env_vars.hpp.

// This process's place in the run, from its launcher's variables
// (launcher_env.hpp: torchrun's RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, or Slurm's, Open MPI's,
// Kubeflow's; a single process without any), and skein's SKEIN_TIMEOUT_S and
// the launcher's run id. Bad values are ConfigErrors naming the variable.
SKEIN_EXPORT RunInfo read_run_env(const LauncherEnv& launcher);
SKEIN_EXPORT bool launched_by_skein();
// SKEIN_LIVE_JOIN=1, or a replica group's worker restarted by its torchrun
// (SKEIN_REPLICA_GROUPS, TORCHELASTIC_RESTART_COUNT > 0): this process
// replaces a lost one of a run with live recovery. Its rank is known only once the run
// takes it in (Trainer::join_as_replacement); until then `run` says rank 1,
// a rank that claims and writes nothing. A ConfigError for WORLD_SIZE 1.
SKEIN_EXPORT bool live_join_requested(RunInfo& run, const LauncherEnv& launcher);

// Opens the run's store: a FileStore when SKEIN_STORE_FILE is set, else a
// TCPStore at MASTER_ADDR:MASTER_PORT (served by rank 0, or by the launcher
// when it says it serves it: launcher.agent_store; torchrun's agent store is
// used under /worker/attempt_<TORCHELASTIC_RESTART_COUNT>, as PyTorch's own
// workers use it), else none (a single process). Fills run.run_id, agreed through the store when the launcher
// does not give one.
SKEIN_EXPORT RunStore open_run_store(RunInfo& run, const LauncherEnv& launcher);

// A random 16-hex-digit id.
SKEIN_EXPORT std::string random_run_id();

}  // namespace skein::core
