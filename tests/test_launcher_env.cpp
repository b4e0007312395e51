// Which launcher started a process and where it stands, from each launcher's
// environment (skein/host/launcher_env.hpp), and Slurm's list syntaxes.
// Torch-free: links libskein_host only.
#define BOOST_TEST_MODULE launcher_env
#include <boost/test/unit_test.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "skein/host/host_address.hpp"
#include "skein/host/launcher_env.hpp"
#include "skein/host/slurm_lists.hpp"
#include "skein/errors.hpp"

namespace {

using skein::core::Launcher;
using skein::core::LauncherEnv;
using Env = std::map<std::string, std::string>;

// The ConfigError's message, or "" when `f` throws none.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const skein::ConfigError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct Expected {
  Launcher launcher;
  int rank, world_size, local_rank, local_world_size, node_rank, nnodes;
  std::string master_addr;
  int master_port;
  std::string label;  // the whole label
};

struct Case {
  const char* what;
  Env env;
  Expected expected;
};

// What srun sets for task `procid` of a job step (a subset: what skein reads,
// and some it must not be misled by).
Env srun_task(int procid, int localid, int nodeid, int tasks, int nodes, const std::string& per_node,
              const std::string& nodelist, const std::string& job = "1234") {
  return {{"SLURM_JOB_ID", job},          {"SLURM_JOBID", job},
          {"SLURM_STEP_ID", "0"},         {"SLURM_PROCID", std::to_string(procid)},
          {"SLURM_LOCALID", std::to_string(localid)}, {"SLURM_NODEID", std::to_string(nodeid)},
          {"SLURM_NTASKS", std::to_string(tasks)},    {"SLURM_NNODES", std::to_string(nodes)},
          {"SLURM_STEP_NUM_TASKS", std::to_string(tasks)}, {"SLURM_STEP_NUM_NODES", std::to_string(nodes)},
          {"SLURM_STEP_TASKS_PER_NODE", per_node},    {"SLURM_TASKS_PER_NODE", per_node},
          {"SLURM_STEP_NODELIST", nodelist},          {"SLURM_JOB_NODELIST", nodelist},
          {"SLURM_NTASKS_PER_NODE", "99"}};  // the job's request, not the step's: ignored
}

// What mpirun sets for one process. OMPI_COMM_WORLD_NODE_RANK is its rank
// among the processes of every job on its node (here, of this job alone),
// not its node's index.
Env mpi_process(int rank, int size, int local_rank, int local_size) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(local_rank)},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(local_size)},
          {"OMPI_COMM_WORLD_NODE_RANK", std::to_string(local_rank)}};
}

Env with(Env env, const Env& more) {
  for (const auto& [k, v] : more) env[k] = v;
  return env;
}

const Env kSkeinWorker = {{"SKEIN_LAUNCHED", "1"},    {"WORLD_SIZE", "4"},        {"RANK", "2"},
                          {"LOCAL_RANK", "2"},        {"LOCAL_WORLD_SIZE", "4"},  {"MASTER_ADDR", "127.0.0.1"},
                          {"MASTER_PORT", "29500"},   {"TORCHELASTIC_RESTART_COUNT", "1"}};
const Env kTorchrunWorker = {{"TORCHELASTIC_RUN_ID", "none"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                             {"TORCHELASTIC_RESTART_COUNT", "0"}, {"GROUP_RANK", "1"},
                             {"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                             {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"no launcher", {}, {Launcher::none, 0, 1, 0, 1, 0, 1, "", 0, "none (a single process)"}},
      {"torchrun's variables by hand",
       {{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29511"}},
       {Launcher::torchrun, 1, 2, 1, 2, 0, 1, "127.0.0.1", 29511,
        "RANK and WORLD_SIZE, no launcher named (2 processes)"}},
      {"a single process told so", {{"WORLD_SIZE", "1"}, {"RANK", "0"}},
       {Launcher::torchrun, 0, 1, 0, 1, 0, 1, "", 0, "RANK and WORLD_SIZE, no launcher named (1 process)"}},
      {"skein train's worker", kSkeinWorker,
       {Launcher::skein, 2, 4, 2, 4, 0, 1, "127.0.0.1", 29500, "skein train (4 processes, restart 1)"}},
      {"skein train's worker on node 1 of 2",
       with(kSkeinWorker, {{"WORLD_SIZE", "8"}, {"RANK", "5"}, {"LOCAL_RANK", "1"}, {"SKEIN_AGENT_STORE", "1"}}),
       {Launcher::skein, 5, 8, 1, 4, 1, 2, "127.0.0.1", 29500, "skein train (8 processes on 2 nodes, restart 1)"}},
      {"skein train inside an srun task: skein's",
       with(srun_task(1, 0, 1, 2, 2, "1(x2)", "gpu[01-02]"), kSkeinWorker),
       {Launcher::skein, 2, 4, 2, 4, 0, 1, "127.0.0.1", 29500, "skein train (4 processes, restart 1)"}},
      {"torchrun, static rendezvous", kTorchrunWorker,
       {Launcher::torchrun, 3, 4, 1, 2, 1, 2, "node0", 29500, "torchrun (the agent's store, restart 0)"}},
      {"torchrun, c10d rendezvous, inside an srun task",
       with(srun_task(0, 0, 0, 2, 2, "1(x2)", "n[1-2]"),
            with(kTorchrunWorker, {{"TORCHELASTIC_USE_AGENT_STORE", "False"}, {"TORCHELASTIC_RESTART_COUNT", "2"}})),
       {Launcher::torchrun, 3, 4, 1, 2, 1, 2, "node0", 29500, "torchrun (rank 0's store, restart 2)"}},
      {"srun, 2 nodes x 2 tasks", srun_task(3, 1, 1, 4, 2, "2(x2)", "gpu[01-02]"),
       {Launcher::slurm, 3, 4, 1, 2, 1, 2, "gpu01", 16234,
        "slurm (job 1234, 4 tasks on 2 nodes, master gpu01:16234)"}},
      {"srun, uneven nodes, long job id", srun_task(4, 0, 2, 5, 3, "2(x2),1", "cpu3,gpu[07-08]", "98765432"),
       {Launcher::slurm, 4, 5, 0, 1, 2, 3, "cpu3", 20432,
        "slurm (job 98765432, 5 tasks on 3 nodes, master cpu3:20432)"}},
      {"srun with MASTER_ADDR and MASTER_PORT set",
       with(srun_task(0, 0, 0, 4, 2, "2(x2)", "gpu[01-02]"), {{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29400"}}),
       {Launcher::slurm, 0, 4, 0, 2, 0, 2, "10.0.0.1", 29400,
        "slurm (job 1234, 4 tasks on 2 nodes, master 10.0.0.1:29400)"}},
      {"srun with torchrun's variables that agree",
       with(srun_task(1, 1, 0, 2, 1, "2", "localhost"),
            {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}}),
       {Launcher::slurm, 1, 2, 1, 2, 0, 1, "localhost", 16234,
        "slurm (job 1234, 2 tasks on 1 node, master localhost:16234)"}},
      {"srun without tasks per node: even shares",
       [] {
         Env e = srun_task(2, 0, 1, 4, 2, "", "a[1-2]");
         e.erase("SLURM_STEP_TASKS_PER_NODE");
         e.erase("SLURM_TASKS_PER_NODE");
         return e;
       }(),
       {Launcher::slurm, 2, 4, 0, 2, 1, 2, "a1", 16234, "slurm (job 1234, 4 tasks on 2 nodes, master a1:16234)"}},
      {"srun, one task: no master", srun_task(0, 0, 0, 1, 1, "1", "gpu01"),
       {Launcher::slurm, 0, 1, 0, 1, 0, 1, "", 0, "slurm (job 1234, 1 task on 1 node)"}},
      {"a Slurm batch script: one process",
       {{"SLURM_JOB_ID", "77"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_NNODES", "2"},
        {"SLURM_JOB_NODELIST", "gpu[01-02]"}},
       {Launcher::none, 0, 1, 0, 1, 0, 1, "", 0, "none (a single process)"}},
      {"mpirun on one node", mpi_process(1, 2, 1, 2),
       {Launcher::openmpi, 1, 2, 1, 2, 0, 1, "127.0.0.1", 29500, "open mpi (2 processes, master 127.0.0.1:29500)"}},
      {"mpirun on one node, MASTER_PORT set", with(mpi_process(0, 2, 0, 2), {{"MASTER_PORT", "31337"}}),
       {Launcher::openmpi, 0, 2, 0, 2, 0, 1, "127.0.0.1", 31337, "open mpi (2 processes, master 127.0.0.1:31337)"}},
      {"mpirun on two nodes, master given",
       with(mpi_process(5, 8, 1, 4), {{"MASTER_ADDR", "n0"}, {"MASTER_PORT", "1234"}}),
       {Launcher::openmpi, 5, 8, 1, 4, 1, 2, "n0", 1234, "open mpi (8 processes on 2 nodes, master n0:1234)"}},
      {"mpirun under Slurm (its daemons are srun tasks): open mpi's",
       with(srun_task(1, 0, 1, 2, 2, "1(x2)", "n[1-2]"),
            with(mpi_process(3, 4, 1, 2), {{"MASTER_ADDR", "n1"}, {"MASTER_PORT", "2345"}})),
       {Launcher::openmpi, 3, 4, 1, 2, 1, 2, "n1", 2345, "open mpi (4 processes on 2 nodes, master n1:2345)"}},
      {"kubeflow PyTorchJob, one process per pod",
       {{"MASTER_ADDR", "job-master-0"}, {"MASTER_PORT", "23456"}, {"WORLD_SIZE", "3"}, {"RANK", "2"},
        {"PET_NNODES", "3"}, {"PET_NPROC_PER_NODE", "1"}, {"PET_NODE_RANK", "2"},
        {"PET_MASTER_ADDR", "job-master-0"}, {"PET_MASTER_PORT", "23456"}},
       {Launcher::kubeflow, 2, 3, 0, 1, 2, 3, "job-master-0", 23456,
        "kubeflow (pod 2 of 3, 1 process per pod, master job-master-0:23456)"}},
      {"kubeflow PyTorchJob, nprocPerNode auto",
       {{"MASTER_ADDR", "j-master-0"}, {"MASTER_PORT", "23456"}, {"WORLD_SIZE", "2"}, {"RANK", "1"},
        {"PET_NNODES", "2"}, {"PET_NPROC_PER_NODE", "auto"}},
       {Launcher::kubeflow, 1, 2, 0, 1, 1, 2, "j-master-0", 23456,
        "kubeflow (pod 1 of 2, 1 process per pod, master j-master-0:23456)"}},
      {"kubeflow TrainJob: PET_ variables only",
       {{"PET_NNODES", "2"}, {"PET_NPROC_PER_NODE", "1"}, {"PET_NODE_RANK", "1"},
        {"PET_MASTER_ADDR", "t-node-0-0.t"}, {"PET_MASTER_PORT", "29400"}},
       {Launcher::kubeflow, 1, 2, 0, 1, 1, 2, "t-node-0-0.t", 29400,
        "kubeflow (pod 1 of 2, 1 process per pod, master t-node-0-0.t:29400)"}},
  };
  return all;
}

struct BadCase {
  const char* what;
  Env env;
  std::vector<std::string> parts;  // each in the one-line message
};

const std::vector<BadCase>& bad_cases() {
  static const std::vector<BadCase> all = {
      {"RANK alone", {{"RANK", "0"}}, {"RANK is set but WORLD_SIZE is not"}},
      {"WORLD_SIZE alone", {{"WORLD_SIZE", "2"}}, {"WORLD_SIZE is set but RANK is not"}},
      {"RANK not a number", {{"WORLD_SIZE", "2"}, {"RANK", "one"}}, {"RANK='one' is not an integer"}},
      {"RANK beyond the world", {{"WORLD_SIZE", "2"}, {"RANK", "2"}}, {"RANK=2 is out of range [0, 1]"}},
      {"WORLD_SIZE zero", {{"WORLD_SIZE", "0"}, {"RANK", "0"}}, {"WORLD_SIZE=0 is out of range"}},
      {"LOCAL_RANK beyond LOCAL_WORLD_SIZE",
       {{"WORLD_SIZE", "4"}, {"RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}},
       {"LOCAL_RANK=2 is out of range [0, 1]"}},
      {"MASTER_PORT too large", {{"WORLD_SIZE", "1"}, {"RANK", "0"}, {"MASTER_PORT", "70000"}},
       {"MASTER_PORT=70000 is out of range [0, 65535]"}},
      {"WORLD_SIZE against srun's task count",
       with(srun_task(0, 0, 0, 4, 2, "2(x2)", "n[1-2]"), {{"WORLD_SIZE", "8"}}),
       {"disagree", "WORLD_SIZE=8", "SLURM_STEP_NUM_TASKS=4"}},
      {"RANK against SLURM_PROCID", with(srun_task(1, 1, 0, 2, 1, "2", "n1"), {{"RANK", "0"}}),
       {"disagree", "RANK=0", "SLURM_PROCID=1"}},
      {"LOCAL_WORLD_SIZE against srun's tasks on the node",
       with(srun_task(1, 1, 0, 4, 2, "2(x2)", "n[1-2]"), {{"LOCAL_WORLD_SIZE", "4"}}),
       {"disagree", "LOCAL_WORLD_SIZE=4", "SLURM_STEP_TASKS_PER_NODE='2(x2)'"}},
      {"RANK against OMPI_COMM_WORLD_RANK", with(mpi_process(1, 2, 1, 2), {{"RANK", "0"}}),
       {"disagree", "RANK=0", "OMPI_COMM_WORLD_RANK=1"}},
      {"tasks per node against the task count", srun_task(0, 0, 0, 5, 2, "2(x2)", "n[1-2]"),
       {"disagree", "SLURM_STEP_TASKS_PER_NODE='2(x2)' counts 4 tasks", "SLURM_STEP_NUM_TASKS=5"}},
      {"srun without tasks per node, uneven",
       [] {
         Env e = srun_task(0, 0, 0, 5, 2, "", "n[1-2]");
         e.erase("SLURM_STEP_TASKS_PER_NODE");
         e.erase("SLURM_TASKS_PER_NODE");
         return e;
       }(),
       {"SLURM_STEP_NUM_TASKS=5", "SLURM_STEP_NUM_NODES=2", "set LOCAL_WORLD_SIZE"}},
      {"malformed tasks per node", srun_task(0, 0, 0, 4, 2, "2(x2", "n[1-2]"),
       {"SLURM_STEP_TASKS_PER_NODE='2(x2'", "tasks per node"}},
      {"malformed node list", srun_task(0, 0, 0, 4, 2, "2(x2)", "gpu[01-"),
       {"SLURM_STEP_NODELIST='gpu[01-'", "host list"}},
      {"SLURM_PROCID not a number", with(srun_task(0, 0, 0, 2, 1, "2", "n1"), {{"SLURM_PROCID", "x"}}),
       {"SLURM_PROCID='x' is not an integer"}},
      {"job id not a number", with(srun_task(0, 0, 0, 2, 1, "2", "n1"), {{"SLURM_JOB_ID", "12_3"}}),
       {"SLURM_JOB_ID='12_3' is not an integer"}},
      {"no node list",
       [] {
         Env e = srun_task(0, 0, 0, 2, 1, "2", "n1");
         e.erase("SLURM_STEP_NODELIST");
         e.erase("SLURM_JOB_NODELIST");
         return e;
       }(),
       {"SLURM_STEP_NODELIST", "set MASTER_ADDR"}},
      {"mpirun on two nodes without a master", mpi_process(5, 8, 1, 4), {"set MASTER_ADDR and MASTER_PORT"}},
      {"mpirun on two nodes without a port", with(mpi_process(5, 8, 1, 4), {{"MASTER_ADDR", "n0"}}),
       {"set MASTER_ADDR and MASTER_PORT"}},
      {"OMPI size not a number", with(mpi_process(0, 2, 0, 2), {{"OMPI_COMM_WORLD_SIZE", "two"}}),
       {"OMPI_COMM_WORLD_SIZE='two' is not an integer"}},
      {"kubeflow elastic range", {{"PET_NNODES", "1:4"}, {"PET_NODE_RANK", "0"}},
       {"PET_NNODES='1:4' is not an integer"}},
      {"kubeflow WORLD_SIZE against pods x processes",
       {{"PET_NNODES", "2"}, {"PET_NPROC_PER_NODE", "2"}, {"PET_NODE_RANK", "0"}, {"WORLD_SIZE", "2"}, {"RANK", "0"}},
       {"disagree", "WORLD_SIZE=2", "PET_NNODES x PET_NPROC_PER_NODE gives 4"}},
      {"kubeflow RANK against PET_NODE_RANK",
       {{"PET_NNODES", "2"}, {"PET_NODE_RANK", "0"}, {"WORLD_SIZE", "2"}, {"RANK", "1"}},
       {"disagree", "RANK=1", "PET_NODE_RANK=0"}},
      {"kubeflow node rank beyond the pods", {{"PET_NNODES", "2"}, {"PET_NODE_RANK", "2"}},
       {"PET_NODE_RANK=2 is out of range [0, 1]"}},
      {"kubeflow without a node rank", {{"PET_NNODES", "2"}}, {"PET_NNODES is set but PET_NODE_RANK is not"}},
      // A product past LONG_MAX wraps (to 0 here): said as an overflow, never as "gives 0".
      {"kubeflow pods x processes overflow",
       {{"PET_NNODES", "4294967296"}, {"PET_NPROC_PER_NODE", "4294967296"}, {"PET_NODE_RANK", "0"}},
       {"PET_NNODES=4294967296 x PET_NPROC_PER_NODE=4294967296 overflow"}},
      {"restart count not a number", with(kTorchrunWorker, {{"TORCHELASTIC_RESTART_COUNT", "abc"}}),
       {"TORCHELASTIC_RESTART_COUNT='abc' is not an integer"}},
      {"restart count negative", with(kTorchrunWorker, {{"TORCHELASTIC_RESTART_COUNT", "-1"}}),
       {"TORCHELASTIC_RESTART_COUNT=-1 is out of range [0, "}},
      {"restart count under skein's launcher", with(kSkeinWorker, {{"TORCHELASTIC_RESTART_COUNT", "1x"}}),
       {"TORCHELASTIC_RESTART_COUNT='1x' is not an integer"}},
      {"MASTER_ADDR too long for a host name", with(kTorchrunWorker, {{"MASTER_ADDR", std::string(100000, 'a')}}),
       {"environment variable MASTER_ADDR='aaaa", "...' (100000 bytes) is not a host name: longer than 253"}},
      {"MASTER_ADDR with a line break", with(kTorchrunWorker, {{"MASTER_ADDR", "node0\nx"}}),
       {"environment variable MASTER_ADDR='node0?x' is not a host name"}},
      {"slurm's first host too long",
       srun_task(0, 0, 0, 2, 1, "2", std::string(300, 'n') + ",n2"),
       {"environment variable SLURM_STEP_NODELIST's first host='nnnn", "(300 bytes) is not a host name"}},
      {"PET_MASTER_ADDR too long",
       {{"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}, {"PET_MASTER_ADDR", std::string(254, 'p')}, {"PET_MASTER_PORT", "1"}},
       {"environment variable PET_MASTER_ADDR='pppp", "(254 bytes)"}},
  };
  return all;
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_launcher_maps_to_ranks_and_a_master) {
  for (const Case& c : cases()) {
    BOOST_TEST_CONTEXT(c.what) {
      const LauncherEnv e = skein::core::read_launcher_env(c.env);
      const Expected& x = c.expected;
      BOOST_TEST(skein::core::launcher_name(e.launcher) == skein::core::launcher_name(x.launcher));
      BOOST_TEST(e.rank == x.rank);
      BOOST_TEST(e.world_size == x.world_size);
      BOOST_TEST(e.local_rank == x.local_rank);
      BOOST_TEST(e.local_world_size == x.local_world_size);
      BOOST_TEST(e.node_rank == x.node_rank);
      BOOST_TEST(e.nnodes == x.nnodes);
      BOOST_TEST(e.master_addr == x.master_addr);
      BOOST_TEST(e.master_port == x.master_port);
      BOOST_TEST(e.label == x.label);
      BOOST_TEST(e.pod_processes == 0);
    }
  }
}

BOOST_AUTO_TEST_CASE(who_serves_the_store_and_names_the_run) {
  BOOST_TEST(!skein::core::read_launcher_env(kSkeinWorker).agent_store);
  BOOST_TEST(skein::core::read_launcher_env(with(kSkeinWorker, {{"SKEIN_AGENT_STORE", "1"}})).agent_store);
  BOOST_TEST(skein::core::read_launcher_env(kTorchrunWorker).agent_store);
  BOOST_TEST(!skein::core::read_launcher_env(with(kTorchrunWorker, {{"TORCHELASTIC_USE_AGENT_STORE", "False"}}))
                  .agent_store);
  BOOST_TEST(!skein::core::read_launcher_env(srun_task(0, 0, 0, 2, 1, "2", "n1")).agent_store);

  BOOST_TEST(skein::core::read_launcher_env(with(kSkeinWorker, {{"SKEIN_RUN_ID", "ab12"}})).run_id == "ab12");
  BOOST_TEST(skein::core::read_launcher_env(kSkeinWorker).run_id == "");
  // torchrun's store outlives a restart: the restart count keeps attempts apart.
  BOOST_TEST(skein::core::read_launcher_env(kTorchrunWorker).run_id == "none-0");
  BOOST_TEST(skein::core::read_launcher_env(srun_task(0, 0, 0, 2, 1, "2", "n1")).run_id == "");
}

// With nprocPerNode > 1, a pod's process is no worker: it stands for the
// node, and skein train --nproc-per-node must start the workers.
BOOST_AUTO_TEST_CASE(a_kubeflow_pod_with_several_processes_stands_for_its_node) {
  const LauncherEnv e = skein::core::read_launcher_env(
      Env{{"MASTER_ADDR", "j-master-0"}, {"MASTER_PORT", "23456"}, {"WORLD_SIZE", "8"}, {"RANK", "1"},
          {"PET_NNODES", "2"}, {"PET_NPROC_PER_NODE", "4"}, {"PET_NODE_RANK", "1"}});
  BOOST_TEST(skein::core::launcher_name(e.launcher) == std::string("kubeflow"));
  BOOST_TEST(e.pod_processes == 4);
  BOOST_TEST(e.node_rank == 1);
  BOOST_TEST(e.nnodes == 2);
  BOOST_TEST(e.world_size == 8);
  BOOST_TEST(e.label == "kubeflow (pod 1 of 2, 4 processes per pod, master j-master-0:23456)");
}

BOOST_AUTO_TEST_CASE(conflicting_and_malformed_values_are_one_line_errors) {
  for (const BadCase& c : bad_cases()) {
    BOOST_TEST_CONTEXT(c.what) {
      const std::string message = error_of([&] { skein::core::read_launcher_env(c.env); });
      BOOST_TEST(!message.empty());
      BOOST_TEST(!contains(message, "\n"), message);
      BOOST_TEST(message.size() < 400u, message.substr(0, 400));  // a 100 KB value is shortened
      for (const std::string& part : c.parts) BOOST_TEST(contains(message, part), message);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_restart_count_is_a_number_and_the_master_names_its_variable) {
  BOOST_TEST(skein::core::read_launcher_env(with(kTorchrunWorker, {{"TORCHELASTIC_RESTART_COUNT", "2"}})).attempt == "2");
  BOOST_TEST(skein::core::read_launcher_env(kTorchrunWorker).master_addr_from == "MASTER_ADDR");
  BOOST_TEST(skein::core::read_launcher_env(srun_task(0, 0, 0, 2, 1, "2", "n1")).master_addr_from ==
             "SLURM_STEP_NODELIST's first host");
  // 253 characters: the longest DNS allows, still a host name.
  BOOST_TEST(skein::core::read_launcher_env(with(kTorchrunWorker, {{"MASTER_ADDR", std::string(253, 'a')}}))
                 .master_addr.size() == 253u);
}

// Resolved at once, where the store is opened: a name that does not resolve
// is one line naming the variable, not minutes of TCPStore retries.
BOOST_AUTO_TEST_CASE(a_master_address_resolves_or_is_refused_at_once) {
  for (const std::string host : {"localhost", "127.0.0.1", "::1"})
    BOOST_TEST(error_of([&] { skein::core::resolve_host(host, "environment variable MASTER_ADDR"); }) == "", host);
  // .invalid never resolves (RFC 6761).
  const std::string message =
      error_of([&] { skein::core::resolve_host("no-such-host.invalid", "environment variable MASTER_ADDR"); });
  BOOST_TEST(contains(message, "environment variable MASTER_ADDR='no-such-host.invalid' does not resolve ("), message);
  BOOST_TEST(!contains(message, "\n"), message);
  const std::string empty = error_of([&] { skein::core::resolve_host("", "--master-addr"); });
  BOOST_TEST(contains(empty, "--master-addr='' is empty"), empty);
}

BOOST_AUTO_TEST_CASE(a_lookup_function_is_read_like_a_map) {
  const auto lookup = [](const std::string& name) -> std::optional<std::string> {
    if (name == "WORLD_SIZE") return std::string("3");
    if (name == "RANK") return std::string("2");
    return std::nullopt;
  };
  const LauncherEnv e = skein::core::read_launcher_env(lookup);
  BOOST_TEST(e.rank == 2);
  BOOST_TEST(e.world_size == 3);
  // An empty value is an unset one, as in the process environment.
  BOOST_TEST(skein::core::read_launcher_env(Env{{"WORLD_SIZE", ""}, {"RANK", ""}}).label == "none (a single process)");
}

BOOST_AUTO_TEST_CASE(the_slurm_port_is_lightnings) {
  BOOST_TEST(skein::core::slurm_master_port(1234) == 16234);
  BOOST_TEST(skein::core::slurm_master_port(98765432) == 20432);
  BOOST_TEST(skein::core::slurm_master_port(7) == 15007);
  BOOST_TEST(skein::core::slurm_master_port(10000) == 15000);
}

BOOST_AUTO_TEST_CASE(slurm_host_lists_expand) {
  using Hosts = std::vector<std::string>;
  const std::vector<std::pair<std::string, Hosts>> lists = {
      {"gpu[01-04,07],cpu3", {"gpu01", "gpu02", "gpu03", "gpu04", "gpu07", "cpu3"}},
      {"node1", {"node1"}},
      {"n[8-10]", {"n8", "n9", "n10"}},
      {"n[08-10]", {"n08", "n09", "n10"}},
      {"x[007]", {"x007"}},
      {"h[1,3],h[5-6]", {"h1", "h3", "h5", "h6"}},
      {"a[1-2]b[3-4]", {"a1b3", "a1b4", "a2b3", "a2b4"}},
      {"rack[1-2]-n[1]", {"rack1-n1", "rack2-n1"}},
      {"c-1.example.org,c-2.example.org", {"c-1.example.org", "c-2.example.org"}},
  };
  for (const auto& [list, hosts] : lists) {
    BOOST_TEST_CONTEXT(list) {
      BOOST_TEST(skein::core::expand_slurm_hostlist(list, "SLURM_STEP_NODELIST") == hosts,
                 boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(malformed_slurm_host_lists_are_one_error_naming_the_variable_and_list) {
  for (const std::string list : {"gpu[01-", "gpu[3-1]", "gpu[]", ",", "a,,b", "a,", "gpu]1", "gpu[[1]]",
                                 "gpu[1-2-3]", "gpu[a-b]", "gpu[1,]", "gpu[-2]", "gpu 1", "", "n[0-99999999]"}) {
    BOOST_TEST_CONTEXT(list) {
      const std::string message = error_of([&] { skein::core::expand_slurm_hostlist(list, "SLURM_JOB_NODELIST"); });
      BOOST_TEST(contains(message, "SLURM_JOB_NODELIST='" + list + "' is not a Slurm host list: "), message);
      BOOST_TEST(!contains(message, "\n"));
    }
  }
}

BOOST_AUTO_TEST_CASE(slurm_tasks_per_node_expand) {
  using Counts = std::vector<int>;
  const std::vector<std::pair<std::string, Counts>> values = {
      {"2(x3),1", {2, 2, 2, 1}}, {"4", {4}}, {"1(x2)", {1, 1}}, {"3,1(x2),2", {3, 1, 1, 2}}};
  for (const auto& [value, counts] : values) {
    BOOST_TEST_CONTEXT(value) {
      BOOST_TEST(skein::core::expand_slurm_tasks_per_node(value, "SLURM_STEP_TASKS_PER_NODE") == counts,
                 boost::test_tools::per_element());
    }
  }
  for (const std::string value : {"2(x", "2(x0)", "0", "a", ",", "2(3)", "", "2(x2)1", "-1"}) {
    BOOST_TEST_CONTEXT(value) {
      const std::string message =
          error_of([&] { skein::core::expand_slurm_tasks_per_node(value, "SLURM_STEP_TASKS_PER_NODE"); });
      BOOST_TEST(contains(message, "SLURM_STEP_TASKS_PER_NODE='" + value + "'"), message);
      BOOST_TEST(!contains(message, "\n"));
    }
  }
}
