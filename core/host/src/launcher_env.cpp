#include "skein/host/launcher_env.hpp"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <tuple>
#include <utility>

#include "skein/host/host_address.hpp"
#include "skein/host/slurm_lists.hpp"
#include "skein/host/env_vars.hpp"
#include "skein/errors.hpp"

namespace skein::core {

namespace {

// A variable, and the one read when it is unset.
struct Var {
  const char* name = nullptr;
  const char* fallback = nullptr;
};

// Where a launcher puts each field. An empty Var: that launcher does not say,
// and the field is derived (complete_slurm, complete_kubeflow, defaults).
struct Names {
  Var rank, world_size, local_rank, local_world_size, node_rank, nnodes, master_addr, master_port;
};

struct Row {
  Launcher launcher;
  const char* marker;  // set and not empty: this launcher started the process
  Names names;
};

constexpr Names kTorchrun = {{env::kRank},       {env::kWorldSize}, {env::kLocalRank},  {env::kLocalWorldSize},
                             {"GROUP_RANK"},     {},                {env::kMasterAddr}, {env::kMasterPort}};

// The one table. Rows in precedence order, the innermost launcher first: a
// process started under nested launchers sees the outer one's variables too
// (skein train or torchrun inside an srun task, mpirun's processes under
// Slurm). torchrun's variables, set explicitly, win over a cluster's row.
// Each row: launcher, marker, then the variables of rank, world size, local
// rank, local world size, node rank, nodes, master address, master port.
constexpr Row kLaunchers[] = {
    {Launcher::skein, env::kLaunched, kTorchrun},
    {Launcher::torchrun, "TORCHELASTIC_RUN_ID", kTorchrun},
    {Launcher::openmpi,
     "OMPI_COMM_WORLD_RANK",
     {{"OMPI_COMM_WORLD_RANK"},
      {"OMPI_COMM_WORLD_SIZE"},
      {"OMPI_COMM_WORLD_LOCAL_RANK"},
      {"OMPI_COMM_WORLD_LOCAL_SIZE"},
      {},    // not OMPI_COMM_WORLD_NODE_RANK: that is the rank on the node across all jobs
      {},
      {},    // MASTER_ADDR, else 127.0.0.1 on one node
      {}}},  // MASTER_PORT, else 29500 on one node
    // A task srun started: srun sets SLURM_STEP_NUM_TASKS. A batch script has
    // SLURM_PROCID and SLURM_NTASKS too, but is one process.
    {Launcher::slurm,
     "SLURM_STEP_NUM_TASKS",
     {{"SLURM_PROCID"},
      {"SLURM_STEP_NUM_TASKS"},
      {"SLURM_LOCALID"},
      {},  // this node's entry of SLURM_STEP_TASKS_PER_NODE
      {"SLURM_NODEID"},
      {"SLURM_STEP_NUM_NODES", "SLURM_NNODES"},
      {},    // the node list's first host
      {}}},  // from SLURM_JOB_ID: slurm_master_port
    // Kubeflow's PyTorchJob: one pod per node; its RANK is the pod's index.
    {Launcher::kubeflow,
     "PET_NNODES",
     {{"PET_NODE_RANK", env::kRank},
      {},  // PET_NNODES x PET_NPROC_PER_NODE
      {},
      {},  // PET_NPROC_PER_NODE, which may be "auto"
      {"PET_NODE_RANK", env::kRank},
      {"PET_NNODES"},
      {"PET_MASTER_ADDR"},
      {"PET_MASTER_PORT"}}},
    // torchrun's variables alone: set by hand, or by a launcher that sets only those.
    {Launcher::torchrun, env::kWorldSize, kTorchrun},
};

constexpr long kDefaultPort = 29500;  // torchrun's default MASTER_PORT

// A number and where it came from: a variable's name, or the rule that derived it.
struct Field {
  std::optional<long> value;
  std::string from;
  bool derived = false;
};

struct Fields {
  Field rank, world_size, local_rank, local_world_size, node_rank, nnodes, master_port;
  std::string master_addr, master_addr_from;
};

// The numeric fields, for what is done to each alike.
constexpr std::pair<Var Names::*, Field Fields::*> kNumbers[] = {
    {&Names::rank, &Fields::rank},
    {&Names::world_size, &Fields::world_size},
    {&Names::local_rank, &Fields::local_rank},
    {&Names::local_world_size, &Fields::local_world_size},
    {&Names::node_rank, &Fields::node_rank},
    {&Names::nnodes, &Fields::nnodes},
    {&Names::master_port, &Fields::master_port},
};

// "RANK=3", or "PET_NNODES x PET_NPROC_PER_NODE gives 8".
std::string shown(const Field& f) { return f.from + (f.derived ? " gives " : "=") + std::to_string(*f.value); }

[[noreturn]] void disagree(const std::string& a, const std::string& b) {
  throw ConfigError("environment variables disagree: " + a + " but " + b);
}

class Reader {
 public:
  explicit Reader(const EnvLookup& env) : env_(env) {}

  std::optional<std::string> get(const char* name) const { return name ? env_(name) : std::nullopt; }

  // The first of var's names that is set, and its value.
  std::optional<std::pair<std::string, std::string>> get(const Var& var) const {
    for (const char* name : {var.name, var.fallback})
      if (auto v = get(name)) return std::make_pair(std::string(name), *v);
    return std::nullopt;
  }

  Field number(const Var& var) const {
    Field f;
    if (auto v = get(var)) {
      f.from = v->first;
      f.value = parse(v->first, v->second);
    }
    return f;
  }

  static long parse(const std::string& name, const std::string& text) {
    char* end = nullptr;
    errno = 0;
    const long x = std::strtol(text.c_str(), &end, 10);
    if (errno != 0 || end == text.c_str() || *end != '\0')
      throw ConfigError("environment variable " + name + "='" + text + "' is not an integer");
    return x;
  }

  Fields fields(const Names& names) const {
    Fields f;
    for (const auto& [var, field] : kNumbers) f.*field = number(names.*var);
    if (auto addr = get(names.master_addr)) std::tie(f.master_addr_from, f.master_addr) = *addr;
    return f;
  }

 private:
  const EnvLookup& env_;
};

Field derived(long value, const std::string& rule) { return {value, rule, true}; }

// Slurm's tasks on this node, from the step's tasks per node ("2(x3),1").
void complete_slurm(const Reader& env, Fields& f) {
  auto list = env.get(Var{"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
  if (!list) return;  // then world size / nodes, when even (defaults)
  const std::vector<int> counts = expand_slurm_tasks_per_node(list->second, list->first);
  long total = 0;
  for (int c : counts) total += c;
  const std::string rule = list->first + "='" + list->second + "'";
  if (f.world_size.value && total != *f.world_size.value)
    disagree(rule + " counts " + std::to_string(total) + " tasks", shown(f.world_size));
  if (f.nnodes.value && static_cast<long>(counts.size()) != *f.nnodes.value)
    disagree(rule + " counts " + std::to_string(counts.size()) + " nodes", shown(f.nnodes));
  if (!f.nnodes.value) f.nnodes = derived(static_cast<long>(counts.size()), rule);
  const long node = f.node_rank.value.value_or(0);
  if (node >= 0 && node < static_cast<long>(counts.size()))
    f.local_world_size = derived(counts[static_cast<std::size_t>(node)], rule + " for node " + std::to_string(node));
}

// Kubeflow: PET_NPROC_PER_NODE processes on each of PET_NNODES pods.
// "auto" (the operator's default) counts as 1, as the operator itself counts
// it for WORLD_SIZE.
void complete_kubeflow(const Reader& env, Fields& f) {
  long per_pod = 1;
  if (auto n = env.get("PET_NPROC_PER_NODE"); n && *n != "auto") per_pod = Reader::parse("PET_NPROC_PER_NODE", *n);
  if (per_pod < 1)
    throw ConfigError("environment variable PET_NPROC_PER_NODE=" + std::to_string(per_pod) + " must be at least 1");
  f.local_world_size = derived(per_pod, "PET_NPROC_PER_NODE");
  if (!f.nnodes.value) return;
  long world = 0;
  if (__builtin_mul_overflow(*f.nnodes.value, per_pod, &world))  // wrapped, it could even read 0 or 8
    throw ConfigError("environment variables PET_NNODES=" + std::to_string(*f.nnodes.value) +
                      " x PET_NPROC_PER_NODE=" + std::to_string(per_pod) + " overflow (more than " +
                      std::to_string(std::numeric_limits<long>::max()) + " processes)");
  f.world_size = derived(world, "PET_NNODES x PET_NPROC_PER_NODE");
  if (per_pod == 1) f.local_rank = derived(0, "one process per pod");
}

// torchrun's variables, where set, over a cluster's values: the same value,
// or a ConfigError naming both.
void apply_torchrun_variables(const Reader& env, Fields& f) {
  const Fields given = env.fields(kTorchrun);
  for (const auto& [var, field] : kNumbers) {
    const Field& mine = given.*field;
    Field& theirs = f.*field;
    if (!mine.value) continue;
    if (theirs.value && *theirs.value != *mine.value) disagree(shown(mine), shown(theirs));
    theirs = mine;
  }
  if (!given.master_addr.empty()) {
    if (!f.master_addr.empty() && f.master_addr != given.master_addr)
      disagree(given.master_addr_from + "=" + given.master_addr, f.master_addr_from + "=" + f.master_addr);
    f.master_addr = given.master_addr;
    f.master_addr_from = given.master_addr_from;
  }
}

void check_range(const Field& f, long min, long max) {
  if (*f.value >= min && *f.value <= max) return;
  throw ConfigError((f.derived ? "" : "environment variable ") + shown(f) + (f.derived ? ", " : " is ") +
                    "out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
}

// Fills what the launcher left unsaid and checks every field's range.
void complete(const Row& row, Fields& f) {
  // Every row names both, or derives the world size (Kubeflow's, always).
  if (!f.world_size.value)
    throw ConfigError(std::string("environment variable ") + row.marker + " is set but " +
                      row.names.world_size.name + " is not");
  if (!f.rank.value)
    throw ConfigError(std::string("environment variable ") + (f.world_size.derived ? row.marker : f.world_size.from) +
                      " is set but " + row.names.rank.name + " is not");
  check_range(f.world_size, 1, 1 << 20);
  const long world = *f.world_size.value;
  check_range(f.rank, 0, world - 1);
  if (f.nnodes.value) check_range(f.nnodes, 1, world);
  if (!f.local_world_size.value) {
    // Without a count per node: equal shares of the nodes (one node when the launcher does not say).
    const long nodes = f.nnodes.value.value_or(1);
    if (world % nodes != 0)
      throw ConfigError(shown(f.world_size) + " processes do not split evenly over " + shown(f.nnodes) +
                        " nodes: set LOCAL_WORLD_SIZE");
    f.local_world_size = derived(world / nodes, f.world_size.from);
  }
  check_range(f.local_world_size, 1, world);
  const long local = *f.local_world_size.value;
  if (!f.local_rank.value) f.local_rank = derived(*f.rank.value % local, f.rank.from);
  check_range(f.local_rank, 0, local - 1);
  if (!f.nnodes.value) f.nnodes = derived((world + local - 1) / local, f.world_size.from);
  check_range(f.nnodes, 1, world);
  if (!f.node_rank.value) f.node_rank = derived(*f.rank.value / local, f.rank.from);
  check_range(f.node_rank, 0, *f.nnodes.value - 1);
  if (!f.master_port.value) f.master_port = derived(0, "");
  check_range(f.master_port, 0, 65535);
}

// Slurm: the master is the node list's first host, the port the job id's.
void slurm_master(const Reader& env, Fields& f) {
  if (f.master_addr.empty()) {
    auto list = env.get(Var{"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"});
    if (!list) throw ConfigError("slurm gives no node list (SLURM_STEP_NODELIST): set MASTER_ADDR");
    f.master_addr = expand_slurm_hostlist(list->second, list->first).front();
    f.master_addr_from = list->first + "'s first host";
  }
  if (*f.master_port.value == 0) {
    auto job = env.get(Var{"SLURM_JOB_ID", "SLURM_JOBID"});
    if (!job) throw ConfigError("slurm gives no job id (SLURM_JOB_ID) to derive the port from: set MASTER_PORT");
    f.master_port = derived(slurm_master_port(Reader::parse(job->first, job->second)), job->first);
  }
}

// Open MPI names no master: 127.0.0.1 when the job is on one node, else the user says.
void openmpi_master(Fields& f) {
  if (!f.master_addr.empty() && *f.master_port.value != 0) return;
  if (*f.local_world_size.value != *f.world_size.value)
    throw ConfigError("open mpi spans several nodes (" + shown(f.world_size) + ", " + shown(f.local_world_size) +
                      ") and names no master: set MASTER_ADDR and MASTER_PORT "
                      "(mpirun -x MASTER_ADDR=<rank 0's host> -x MASTER_PORT=<port>)");
  if (f.master_addr.empty()) f.master_addr = "127.0.0.1";
  if (*f.master_port.value == 0) f.master_port = derived(kDefaultPort, "torchrun's default port");
}

// "1 task", "2 tasks", "2 processes".
std::string count(long n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string label(const Row& row, const Reader& env, const LauncherEnv& e) {
  const std::string master =
      e.world_size > 1 ? ", master " + e.master_addr + ":" + std::to_string(e.master_port) : std::string();
  const std::string restart = ", restart " + e.attempt;
  const std::string spread =
      count(e.world_size, "process", "processes") + (e.nnodes > 1 ? " on " + count(e.nnodes, "node", "nodes") : "");
  switch (row.launcher) {
    case Launcher::skein:
      return "skein train (" + spread + restart + ")";
    case Launcher::torchrun:
      if (!env.get("TORCHELASTIC_RUN_ID")) return "RANK and WORLD_SIZE, no launcher named (" + spread + ")";
      // Which store the workers share is what TORCHELASTIC_USE_AGENT_STORE
      // tells; it is not the rendezvous: torch 2.x's c10d rendezvous shares
      // the agent's store too, unless TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1.
      return std::string("torchrun (") + (e.agent_store ? "the agent's store" : "rank 0's store") + restart + ")";
    case Launcher::slurm:
      return "slurm (job " + env.get(Var{"SLURM_JOB_ID", "SLURM_JOBID"}).value_or(std::make_pair("", "?")).second +
             ", " + count(e.world_size, "task", "tasks") + " on " + count(e.nnodes, "node", "nodes") + master + ")";
    case Launcher::openmpi:
      return "open mpi (" + spread + master + ")";
    case Launcher::kubeflow:
      return "kubeflow (pod " + std::to_string(e.node_rank) + " of " + std::to_string(e.nnodes) + ", " +
             count(e.local_world_size, "process", "processes") + " per pod" + master + ")";
    case Launcher::none:
      break;
  }
  return "none (a single process)";
}

// TORCHELASTIC_RESTART_COUNT, checked: a number from 0 ("0" when unset).
std::string restart_count(const Reader& env) {
  const auto text = env.get(env::kRestartCount);
  if (!text) return "0";
  const long n = Reader::parse(env::kRestartCount, *text);
  if (n < 0)
    throw ConfigError(std::string("environment variable ") + env::kRestartCount + "=" + *text +
                      " is out of range [0, " + std::to_string(std::numeric_limits<long>::max()) + "]");
  return std::to_string(n);
}

std::string run_id(Launcher launcher, const Reader& env) {
  if (auto id = env.get(env::kRunId)) return *id;
  if (launcher != Launcher::torchrun) return "";
  // A restart keeps torchrun's store (static rendezvous): the count keeps attempts apart.
  if (auto id = env.get("TORCHELASTIC_RUN_ID")) return *id + "-" + restart_count(env);
  return "";
}

bool agent_store(Launcher launcher, const Reader& env) {
  if (env.get(env::kAgentStore).value_or("") == "1") return true;  // skein train's, on several nodes
  return launcher == Launcher::torchrun && env.get(env::kTorchElasticAgentStore).value_or("") == "True";
}

}  // namespace

const char* launcher_name(Launcher launcher) {
  switch (launcher) {
    case Launcher::skein: return "skein";
    case Launcher::torchrun: return "torchrun";
    case Launcher::slurm: return "slurm";
    case Launcher::openmpi: return "openmpi";
    case Launcher::kubeflow: return "kubeflow";
    case Launcher::none: break;
  }
  return "none";
}

int slurm_master_port(long job_id) { return 15000 + static_cast<int>(job_id % 10000); }

LauncherEnv read_launcher_env(const EnvLookup& lookup) {
  const Reader env(lookup);
  const Row* row = nullptr;
  for (const Row& r : kLaunchers)
    if (env.get(r.marker)) {
      row = &r;
      break;
    }
  if (!row) {
    if (env.get(env::kRank)) throw ConfigError("environment variable RANK is set but WORLD_SIZE is not");
    return {};
  }
  Fields f = env.fields(row->names);
  if (row->launcher == Launcher::slurm) complete_slurm(env, f);
  if (row->launcher == Launcher::kubeflow) complete_kubeflow(env, f);
  if (row->launcher == Launcher::slurm || row->launcher == Launcher::openmpi || row->launcher == Launcher::kubeflow)
    apply_torchrun_variables(env, f);
  complete(*row, f);
  const bool distributed = *f.world_size.value > 1;
  if (distributed && row->launcher == Launcher::slurm) slurm_master(env, f);
  if (distributed && row->launcher == Launcher::openmpi) openmpi_master(f);

  LauncherEnv e;
  e.launcher = row->launcher;
  e.rank = static_cast<int>(*f.rank.value);
  e.world_size = static_cast<int>(*f.world_size.value);
  e.local_rank = static_cast<int>(*f.local_rank.value);
  e.local_world_size = static_cast<int>(*f.local_world_size.value);
  e.node_rank = static_cast<int>(*f.node_rank.value);
  e.nnodes = static_cast<int>(*f.nnodes.value);
  e.master_addr = f.master_addr;
  e.master_addr_from = f.master_addr_from;
  if (!e.master_addr.empty() && !e.master_addr_from.empty())
    check_host_name(e.master_addr, "environment variable " + e.master_addr_from);
  e.master_port = static_cast<int>(*f.master_port.value);
  e.agent_store = agent_store(row->launcher, env);
  e.run_id = run_id(row->launcher, env);
  e.attempt = restart_count(env);
  if (row->launcher == Launcher::kubeflow && e.local_world_size > 1) e.pod_processes = e.local_world_size;
  e.label = label(*row, env, e);
  return e;
}

LauncherEnv read_launcher_env(const std::map<std::string, std::string>& vars) {
  return read_launcher_env([&vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  });
}

void check_timeout_s(double seconds, const std::string& what) {
  if (!(seconds > 0 && seconds <= kMaxTimeoutS))
    throw ConfigError(what + ": must be a number of seconds in (0, " +
                      std::to_string(static_cast<long>(kMaxTimeoutS)) + "] (30 days)");
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
}

}  // namespace skein::core
