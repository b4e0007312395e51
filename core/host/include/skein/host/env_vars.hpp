#pragma once
// Every environment variable skein reads or sets: the one table of their
// names. torchrun's variables keep torchrun's names, so workers started by
// torchrun, by hand or by `skein train` read the same ones.
#include "skein/detail/sdk_env_vars.hpp"  // the two the SDK itself reads

namespace skein::env {

// torchrun's (set by `skein train --nproc-per-node`, read by every worker).
constexpr const char* kRank = "RANK";
constexpr const char* kWorldSize = "WORLD_SIZE";
constexpr const char* kLocalRank = "LOCAL_RANK";
constexpr const char* kLocalWorldSize = "LOCAL_WORLD_SIZE";
constexpr const char* kMasterAddr = "MASTER_ADDR";
constexpr const char* kMasterPort = "MASTER_PORT";
constexpr const char* kRestartCount = "TORCHELASTIC_RESTART_COUNT";  // attempt number, from 0
constexpr const char* kMaxRestarts = "TORCHELASTIC_MAX_RESTARTS";
// Set by torchrun only: where a failing worker describes its failure, and
// "True" when torchrun's agent serves the TCPStore at MASTER_ADDR:MASTER_PORT
// itself (static rendezvous); workers then use it under /worker/attempt_<N>.
constexpr const char* kTorchElasticErrorFile = "TORCHELASTIC_ERROR_FILE";
constexpr const char* kTorchElasticAgentStore = "TORCHELASTIC_USE_AGENT_STORE";
constexpr const char* kOmpThreads = "OMP_NUM_THREADS";  // set to 1 for workers unless given

// Set by skein's launcher for its workers.
constexpr const char* kStoreFile = "SKEIN_STORE_FILE";    // FileStore rendezvous (one node)
constexpr const char* kStoreUsers = "SKEIN_STORE_USERS";  // processes sharing that file
constexpr const char* kAgentStore = "SKEIN_AGENT_STORE";  // "1": the launcher serves the TCPStore
constexpr const char* kRunId = "SKEIN_RUN_ID";            // one id per attempt of a run
constexpr const char* kTimeout = "SKEIN_TIMEOUT_S";       // collective and store timeout, seconds
constexpr const char* kLaunched = "SKEIN_LAUNCHED";       // "1": the launcher compares history digests
constexpr const char* kErrorFile = "SKEIN_ERROR_FILE";    // where a failing worker reports
constexpr const char* kLiveJoin = "SKEIN_LIVE_JOIN";      // "1": a replacement that joins a live run

// Set by users: live recovery under torchrun (docs/distributed.md, "Live
// recovery"), one torchrun per replica group, each its own rendezvous.
constexpr const char* kReplicaGroup = "SKEIN_REPLICA_GROUP";    // this torchrun's group, from 0
constexpr const char* kReplicaGroups = "SKEIN_REPLICA_GROUPS";  // how many groups

// Cluster launchers' (Slurm's srun, Open MPI's mpirun, Kubeflow's
// PyTorchJob): read only through core/host/src/launcher_env.cpp, whose table
// names them; docs/clusters.md lists them.

// Set by users.
constexpr const char* kPluginPath = "SKEIN_PLUGIN_PATH";  // more plugin directories, ':'-separated
constexpr const char* kDebugPlugins = "SKEIN_DEBUG_PLUGINS";  // "1": explain plugin discovery on stderr
constexpr const char* kAllowUnsafePluginDir = "SKEIN_ALLOW_UNSAFE_PLUGIN_DIR";  // "1": skip permission checks
constexpr const char* kAllowChangedScript = "SKEIN_ALLOW_CHANGED_SCRIPT";       // "1": a TorchScript file may differ
                                                                                // from the one a checkpoint recorded

}  // namespace skein::env
