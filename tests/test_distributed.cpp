#define BOOST_TEST_MODULE distributed
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdlib>
#include <functional>

#include <torch/torch.h>

#include "plugins/probe_model.hpp"
#include "test_support.hpp"

// Multi-process runs of the real `skein` binary on loopback. Runs that open
// TCP ports do so inside a private network namespace when the machine allows
// it. Every run is bounded by `timeout` and by skein's own --timeout.

namespace {

using test::contains;
using test::load_json;
const std::string kSkein = SKEIN_EXE;
const std::string kProbe = " --plugin-dir " TEST_PLUGIN_DIR " ";
constexpr int kTimeout = 60;  // skein's bound on any store wait or collective

nlohmann::json base_config() {
  auto cfg = test::synthetic_config();
  cfg["model"] = {{"plugin", "probe_model"}, {"hidden", 8}};
  cfg["parallel"] = {{"plugin", "ddp"}};
  cfg["history"] = {{"plugin", "filestore"}};
  return cfg;
}

nlohmann::json without_durations(nlohmann::json epochs) {
  for (auto& e : epochs) e.erase("dur");
  return epochs;
}

std::vector<torch::Tensor> load_tensors(const std::string& path) {
  std::vector<torch::Tensor> v;
  torch::load(v, path);
  return v;
}

struct Fixture {
  test::TempDir tmp;
  int runs = 0;

  // Runs skein with `args` (a private network namespace when available);
  // the config is written first. Returns the result; dir is the run dir.
  test::CommandResult train(const nlohmann::json& cfg, const std::string& args, std::string& dir) {
    const std::string cfg_path = tmp.str("c" + std::to_string(++runs) + ".json");
    test::write_text(cfg_path, cfg.dump());
    dir = tmp.str("run" + std::to_string(runs));
    const std::string cmd = kSkein + " train --config " + cfg_path + " --run-dir " + dir + kProbe +
                            args;
    return test::run(test::in_private_network(cmd), 240);
  }

  // The config of a run whose workers another launcher starts (history
  // merged through rank 0's TCPStore), written to <name>.json.
  std::string external_config(const std::string& name) {
    auto cfg = base_config();
    cfg["history"]["plugin"] = "tcpstore";
    const std::string path = tmp.str(name + ".json");
    test::write_text(path, cfg.dump());
    return path;
  }

  // `skein train` arguments of such a run, into run directory <name>.
  std::string external_train_args(const std::string& name) {
    return " train --config " + external_config(name) + " --run-dir " + tmp.str(name) + kProbe +
           " --plugin probe_callback:dump=true";
  }

  // Starts two `skein train` processes by hand, as another launcher would,
  // each with the variables env_of(i) and `more` arguments (a private
  // network namespace when available); their output goes to <name>0.log and
  // <name>1.log. Two workers, or, with --nproc-per-node, two nodes' launchers.
  test::CommandResult run_two(const std::string& name, const std::function<std::string(int)>& env_of,
                              const std::string& more = "") {
    const std::string args = external_train_args(name) + more;
    std::string script;
    for (int i : {0, 1})
      script += "env " + env_of(i) + " SKEIN_TIMEOUT_S=60 " + kSkein + args + " > " +
                tmp.str(name + std::to_string(i)) + ".log 2>&1 & ";
    script += "wait %1; a=$?; wait %2; b=$?; exit $((a + b))";
    return test::run(test::in_private_network(script), 240);
  }

  std::string logs_of(const std::string& name) {
    return test::read_text(tmp.str(name + "0.log")) + test::read_text(tmp.str(name + "1.log"));
  }

  // Job 4242's master port: Slurm's rule's (15000 + 4242) inside a private
  // network, where it is free; on the host's loopback a free one, which
  // srun_env gives as MASTER_PORT.
  const bool isolated = test::private_network_available();
  const std::string slurm_port = isolated ? "19242" : std::to_string(test::free_port());

  // What srun sets for task `task` of job 4242's step on `nodes` nodes with
  // `per_node` tasks each, the first node being this machine (no RANK or WORLD_SIZE).
  std::string srun_env(int task, int nodes, int per_node) const {
    const std::string n = std::to_string(nodes), tasks = std::to_string(nodes * per_node);
    const std::string layout = "'" + std::to_string(per_node) + "(x" + n + ")'";
    const std::string hosts = nodes > 1 ? "'localhost,node[1-" + std::to_string(nodes - 1) + "]'" : "localhost";
    return "SLURM_JOB_ID=4242 SLURM_JOBID=4242 SLURM_STEP_ID=0 SLURM_PROCID=" + std::to_string(task) +
           " SLURM_LOCALID=" + std::to_string(task % per_node) + " SLURM_NODEID=" + std::to_string(task / per_node) +
           " SLURM_NTASKS=" + tasks + " SLURM_NNODES=" + n + " SLURM_STEP_NUM_TASKS=" + tasks +
           " SLURM_STEP_NUM_NODES=" + n + " SLURM_STEP_TASKS_PER_NODE=" + layout + " SLURM_TASKS_PER_NODE=" +
           layout + " SLURM_STEP_NODELIST=" + hosts + " SLURM_JOB_NODELIST=" + hosts +
           (isolated ? "" : " MASTER_PORT=" + slurm_port);
  }

  // Rank 0 found every rank's history the same, and so they are.
  void expect_ranks_agree(const std::string& dir) {
    BOOST_TEST(load_json(dir + "/run.json")["consistent"].get<bool>());
    BOOST_TEST(test::read_text(dir + "/probe_history_rank0.json") ==
               test::read_text(dir + "/probe_history_rank1.json"));
  }

  // The launcher rank 0 wrote into train.log and config_history.jsonl.
  void expect_launched_by(const std::string& dir, const std::string& label) {
    const std::string log = test::read_text(dir + "/train.log");
    BOOST_TEST(contains(log, "launched by: " + label), log);
    const auto start = nlohmann::json::parse(test::read_text(dir + "/config_history.jsonl"));
    BOOST_TEST(contains(start.value("launched_by", ""), label), start.dump());
  }
};

// A finished run's parameters, dumped by each rank: equal to the bit on both
// and finite (compression must keep the ranks in step).
void check_final_parameters_equal(const std::string& dir) {
  BOOST_TEST(load_json(dir + "/run.json")["consistent"].get<bool>());
  auto p0 = load_tensors(dir + "/probe_params_rank0.pt");
  auto p1 = load_tensors(dir + "/probe_params_rank1.pt");
  BOOST_REQUIRE(p0.size() == 4u);
  BOOST_REQUIRE(p1.size() == p0.size());
  for (std::size_t i = 0; i < p0.size(); ++i) {
    BOOST_TEST(torch::equal(p0[i], p1[i]), "final parameter " << i);
    BOOST_TEST(p0[i].scalar_type() == torch::kFloat32);
    BOOST_TEST(torch::isfinite(p0[i]).all().item<bool>());
  }
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(distributed, Fixture)

BOOST_AUTO_TEST_CASE(histories_are_identical_on_every_rank_with_both_store_backends) {
  std::map<std::string, nlohmann::json> by_backend;
  for (const std::string backend : {"filestore", "tcpstore"}) {
    auto cfg = base_config();
    cfg["history"]["plugin"] = backend;
    std::string dir;
    auto r = train(cfg, "--nproc-per-node 3 --timeout 60 --plugin probe_callback:dump=true", dir);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, backend << ": " << r.err);
    const std::string h0 = test::read_text(dir + "/probe_history_rank0.json");
    BOOST_TEST(!h0.empty());
    for (int rank : {1, 2})
      BOOST_TEST(test::read_text(dir + "/probe_history_rank" + std::to_string(rank) + ".json") == h0,
                 backend << " rank " << rank);
    // Every rank's batches are in every history, marked with their rank.
    auto history = nlohmann::json::parse(h0);
    std::set<int> ranks;
    for (const auto& b : history[0]["batches"]) ranks.insert(b["rank"].get<int>());
    BOOST_TEST(ranks.size() == 3u);
    auto run = load_json(dir + "/run.json");
    BOOST_TEST(run["consistent"].get<bool>());
    BOOST_TEST(run["history_digests"].size() == 3u);
    auto saved = history;  // the probe dumped after recording its events
    saved.back().erase("probe_events");
    BOOST_TEST(load_json(dir + "/history.json") == saved);
    BOOST_TEST(!boost::filesystem::exists(dir + "/history.filestore"), "store file left behind");
    // Parameters end identical on every rank.
    auto p0 = load_tensors(dir + "/probe_params_rank0.pt");
    for (int rank : {1, 2}) {
      auto p = load_tensors(dir + "/probe_params_rank" + std::to_string(rank) + ".pt");
      BOOST_REQUIRE(p.size() == p0.size());
      for (std::size_t i = 0; i < p.size(); ++i) BOOST_TEST(torch::equal(p[i], p0[i]));
    }
    by_backend[backend] = without_durations(history);
  }
  BOOST_TEST(by_backend["filestore"] == by_backend["tcpstore"]);
}

// --nproc-per-node 2 with no parallel plugin in the config: ddp, said in the
// log, and the ranks train one model.
BOOST_AUTO_TEST_CASE(several_processes_without_a_parallel_plugin_train_with_ddp) {
  auto cfg = base_config();
  cfg.erase("parallel");
  std::string dir;
  auto r = train(cfg, "--nproc-per-node 2 --timeout 60", dir);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(test::read_text(dir + "/train.log"), "parallel: ddp (the run has 2 processes"));
  BOOST_TEST(load_json(dir + "/config.json")["parallel"]["plugin"].get<std::string>() == "ddp");
  BOOST_TEST(load_json(dir + "/run.json")["consistent"].get<bool>());
}

BOOST_AUTO_TEST_CASE(local_history_on_several_ranks_is_recorded_but_not_enforced) {
  auto cfg = base_config();
  cfg["history"]["plugin"] = "local";
  std::string dir;
  auto r = train(cfg, "--nproc-per-node 2 --timeout 60", dir);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  auto run = load_json(dir + "/run.json");
  BOOST_TEST(!run["checked"].get<bool>());
  BOOST_TEST(!run["consistent"].get<bool>());  // each rank kept its own batches
  BOOST_TEST(contains(r.err, "ranks kept their own histories"), r.err);
  // Warnings go one way: live on stderr, and kept in train.log (not on stdout).
  const std::string warning = "skein: warning: history 'local' keeps each rank's own batches";
  BOOST_TEST(contains(r.err, warning), r.err);
  BOOST_TEST(contains(test::read_text(dir + "/train.log"), warning));
  BOOST_TEST(!contains(r.out, warning), r.out);
}

BOOST_AUTO_TEST_CASE(history_backend_is_swapped_by_config_alone) {
  nlohmann::json reference;
  for (const std::string backend : {"local", "filestore", "tcpstore"}) {
    auto cfg = base_config();
    cfg["parallel"]["plugin"] = "none";
    cfg["history"]["plugin"] = backend;
    std::string dir;
    auto r = train(cfg, "", dir);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, backend << ": " << r.err);
    auto h = without_durations(load_json(dir + "/history.json"));
    if (reference.is_null()) reference = h;
    BOOST_TEST(h == reference, backend);
  }
}

BOOST_AUTO_TEST_CASE(ddp_gradients_equal_the_single_process_gradients_of_the_global_batch) {
  auto cfg = base_config();
  cfg["max_epochs"] = 1;
  // A tiny bucket cap: several buckets, launched during backward.
  std::string dir;
  auto r = train(cfg, "--nproc-per-node 2 --timeout 60 --set parallel.bucket_cap_mb=0.0001 "
                      "--set parallel.first_bucket_mb=0.0001 --plugin probe_callback:dump=true", dir);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  auto d0 = load_tensors(dir + "/probe_first_batch_rank0.pt");
  auto d1 = load_tensors(dir + "/probe_first_batch_rank1.pt");
  // Layout: inputs, targets, 4 parameters (fc1 w/b, fc2 w/b), 4 gradients.
  BOOST_REQUIRE(d0.size() == 10u);
  for (int i = 2; i < 6; ++i) BOOST_TEST(torch::equal(d0[i], d1[i]), "initial parameter " << i);
  for (int i = 6; i < 10; ++i) BOOST_TEST(torch::equal(d0[i], d1[i]), "synced gradient " << i);
  BOOST_TEST(!torch::equal(d0[0], d1[0]), "ranks must see different samples");

  // The same model on the concatenated batch in one process.
  ProbeModel model(16, 8, 4, false);
  {
    torch::NoGradGuard no_grad;
    auto params = model.parameters();
    for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(d0[2 + i]);
  }
  auto x = torch::cat({d0[0], d1[0]});
  auto y = torch::cat({d0[1], d1[1]});
  torch::nn::functional::cross_entropy(model.forward(x), y).backward();
  auto params = model.parameters();
  // Tolerance: float32 sums in a different order (per-rank means, then the average).
  for (std::size_t i = 0; i < params.size(); ++i)
    BOOST_TEST(torch::allclose(params[i].grad(), d0[6 + i], 1e-5, 1e-6), "gradient " << i);
}

// compression=fp16: every gradient bucket crosses Gloo as float16. One run
// of each kind, same seed: the fp16 gradients of the first batch are float16
// values (so they really travelled as half) and are within float16's
// rounding of the uncompressed ones; training keeps every rank equal.
BOOST_AUTO_TEST_CASE(fp16_compression_keeps_ranks_equal_and_gradients_within_half_precision) {
  std::map<std::string, std::string> dirs;
  for (const std::string compression : {"none", "fp16"}) {
    auto cfg = base_config();
    cfg["max_epochs"] = 2;
    cfg["parallel"]["compression"] = compression;
    // Several buckets (one per parameter), as in the exact-gradient test.
    auto r = train(cfg, "--nproc-per-node 2 --timeout 60 --set parallel.bucket_cap_mb=0.0001 "
                        "--set parallel.first_bucket_mb=0.0001 --plugin probe_callback:dump=true",
                   dirs[compression]);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, compression << ": " << r.err);
  }
  const std::string& dir = dirs["fp16"];
  check_final_parameters_equal(dir);

  auto exact = load_tensors(dirs["none"] + "/probe_first_batch_rank0.pt");
  auto half0 = load_tensors(dir + "/probe_first_batch_rank0.pt");
  auto half1 = load_tensors(dir + "/probe_first_batch_rank1.pt");
  auto other = load_tensors(dirs["none"] + "/probe_first_batch_rank1.pt");
  BOOST_REQUIRE(exact.size() == 10u);
  BOOST_REQUIRE(half0.size() == 10u);
  // Same seed: same batches and initial parameters in both runs.
  for (int i = 0; i < 6; ++i) BOOST_TEST(torch::equal(exact[i], half0[i]), "input or parameter " << i);

  // Each rank's own gradient of its batch, for the error bound below.
  ProbeModel model(16, 8, 4, false);
  std::vector<std::vector<torch::Tensor>> local;
  for (const auto* d : {&exact, &other}) {
    {
      torch::NoGradGuard no_grad;
      auto params = model.parameters();
      for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_((*d)[2 + i]);
    }
    model.zero_grad();
    torch::nn::functional::cross_entropy(model.forward((*d)[0]), (*d)[1]).backward();
    local.emplace_back();
    for (const auto& p : model.parameters()) local.back().push_back(p.grad().clone());
  }
  for (int i = 6; i < 10; ++i) {
    const auto& g = half0[i];
    BOOST_TEST(torch::equal(g, half1[i]), "synced gradient " << i);
    BOOST_TEST(g.scalar_type() == torch::kFloat32);
    // Reduced in float16: every value is a float16 value; without compression
    // the values are not (the test would not tell the two apart otherwise).
    BOOST_TEST(torch::equal(g, g.to(torch::kFloat16).to(torch::kFloat32)), "gradient " << i);
    BOOST_TEST(!torch::equal(exact[i], exact[i].to(torch::kFloat16).to(torch::kFloat32)));
    // Each rank rounds g_r / 2 to half (relative error 2^-11), the sum is
    // rounded once more (2^-11 of it), and values below float16's normal range
    // are off by at most half a subnormal step (2^-25) each time; the bound
    // allows twice that, plus float32's own rounding.
    const auto& g0 = local[0][i - 6];
    const auto& g1 = local[1][i - 6];
    auto bound = (g0.abs() + g1.abs()) / 2 * std::ldexp(1.0, -10) + exact[i].abs() * std::ldexp(1.0, -10) +
                 std::ldexp(1.0, -23) + exact[i].abs() * 1e-5 + 1e-7;
    auto error = (g - exact[i]).abs();
    BOOST_TEST((error <= bound).all().item<bool>(),
               "gradient " << i << ": largest error " << error.max().item<double>() << ", largest allowed "
                           << bound.max().item<double>());
  }
}

// compression=powersgd, rank 1, no warm-up: the first batch's synced weight
// gradients are rank-1 matrices (the approximation, not the exact average),
// the same on both ranks; biases (vectors) travel uncompressed and equal the
// exact average; training keeps every rank's parameters bit-identical.
BOOST_AUTO_TEST_CASE(powersgd_compression_keeps_ranks_equal_and_sends_low_rank_weight_gradients) {
  std::map<std::string, std::string> dirs;
  for (const std::string compression : {"none", "powersgd"}) {
    auto cfg = base_config();
    cfg["max_epochs"] = 2;
    cfg["parallel"]["compression"] = compression;
    cfg["parallel"]["powersgd_rank"] = 1;
    cfg["parallel"]["powersgd_warmup_steps"] = 0;
    auto r = train(cfg, "--nproc-per-node 2 --timeout 60 --plugin probe_callback:dump=true", dirs[compression]);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, compression << ": " << r.err);
  }
  const std::string& dir = dirs["powersgd"];
  check_final_parameters_equal(dir);
  auto exact = load_tensors(dirs["none"] + "/probe_first_batch_rank0.pt");
  auto low0 = load_tensors(dir + "/probe_first_batch_rank0.pt");
  auto low1 = load_tensors(dir + "/probe_first_batch_rank1.pt");
  BOOST_REQUIRE(exact.size() == 10u);
  BOOST_REQUIRE(low0.size() == 10u);
  for (int i = 0; i < 6; ++i) BOOST_TEST(torch::equal(exact[i], low0[i]), "input or parameter " << i);
  // Layout: gradients of fc1.weight (8x16), fc1.bias, fc2.weight (4x8), fc2.bias.
  for (int i : {6, 8}) {
    BOOST_TEST(torch::equal(low0[i], low1[i]), "synced gradient " << i);
    const auto s = torch::linalg_svdvals(low0[i]);
    const double s0 = s[0].item<double>(), s1 = s[1].item<double>();
    BOOST_TEST(s1 <= 1e-6 * s0, "gradient " << i << " is not rank 1: " << s);
    BOOST_TEST(!torch::allclose(low0[i], exact[i], 1e-3, 1e-5), "gradient " << i << " was not compressed");
    // The exact average is not rank 1 itself (else the test proves nothing),
    // and its projection onto P is no farther from it than it is from zero.
    const auto exact_s = torch::linalg_svdvals(exact[i]);
    const double e0 = exact_s[0].item<double>(), e1 = exact_s[1].item<double>();
    BOOST_TEST(e1 > 1e-3 * e0);
    const double distance = (low0[i] - exact[i]).norm().item<double>();
    const double size = exact[i].norm().item<double>();
    BOOST_TEST(distance <= size, "gradient " << i);
  }
  for (int i : {7, 9}) BOOST_TEST(torch::allclose(low0[i], exact[i], 1e-5, 1e-6), "uncompressed bias " << i);
}

BOOST_AUTO_TEST_CASE(an_unknown_compression_is_a_config_error) {
  auto cfg = base_config();
  cfg["parallel"]["compression"] = "int8";
  std::string dir;
  auto r = train(cfg, "--nproc-per-node 2 --timeout 60", dir);
  BOOST_TEST(r.exit_code == 2, r.err);
  BOOST_TEST(test::one_error_line(r), r.err);
  BOOST_TEST(contains(r.err, "ddp"), r.err);
  BOOST_TEST(contains(r.err, "'compression' must be none, fp16 or powersgd"), r.err);
}

// zero on the command line: 2 epochs of Adam with a checkpoint each, then 2
// more resumed under ddp and, from a copy, under zero: its optimizer.pt is
// the one ddp reads, so both continue alike, as a run never stopped; the
// final model exports.
BOOST_AUTO_TEST_CASE(a_zero_run_resumes_under_ddp_as_under_zero) {
  auto cfg = base_config();
  cfg["parallel"] = {{"plugin", "zero"}, {"stage", 2}};
  cfg["optimizer"] = {{"plugin", "adam"}, {"lr", 0.01}};
  cfg["max_epochs"] = 2;
  std::string dir;
  auto r = train(cfg, "--nproc-per-node 2 --timeout 60 --plugin checkpoint", dir);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  // Each rank's optimizer state in results.json: under zero a part each,
  // under ddp (resumed below) the whole on every rank.
  const auto zero_state = load_json(dir + "/results.json")["optimizer_state_mb_per_rank"];
  BOOST_REQUIRE(zero_state.size() == 2u);
  const std::string copy = dir + "-copy";
  BOOST_REQUIRE(test::run("cp -r " + dir + " " + copy).exit_code == 0);
  auto resume = [&](const std::string& run_dir, const std::string& more) {
    return test::run(test::in_private_network(kSkein + " train --resume " + run_dir + kProbe +
                                              " --nproc-per-node 2 --timeout 60 --set max_epochs=4" + more),
                     240);
  };
  r = resume(dir, " --plugin ddp");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto ddp_state = load_json(dir + "/results.json")["optimizer_state_mb_per_rank"];
  BOOST_REQUIRE(ddp_state.size() == 2u);
  BOOST_TEST(ddp_state[0].get<double>() == ddp_state[1].get<double>());
  BOOST_TEST(zero_state[0].get<double>() > 0);
  BOOST_TEST(zero_state[1].get<double>() > 0);
  BOOST_TEST(zero_state[0].get<double>() + zero_state[1].get<double>() == ddp_state[0].get<double>(),
             boost::test_tools::tolerance(1e-9));
  r = resume(copy, "");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto under_ddp = test::comparable_history(load_json(dir + "/history.json"));
  const auto under_zero = test::comparable_history(load_json(copy + "/history.json"));
  BOOST_TEST(under_ddp.size() == 4u);
  BOOST_TEST(under_ddp == under_zero, under_ddp.dump() << "\n" << under_zero.dump());
  // ... and as 4 epochs never stopped: the optimizer's state came back.
  cfg["max_epochs"] = 4;
  std::string straight;
  r = train(cfg, "--nproc-per-node 2 --timeout 60", straight);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(test::comparable_history(load_json(straight + "/history.json")) == under_zero);
  r = test::run(kSkein + " export " + dir + kProbe + "--format torchscript --out " + dir + "/model.ts");
  BOOST_TEST(r.exit_code == 0, r.err);
}

BOOST_AUTO_TEST_CASE(a_stop_decided_from_history_happens_on_the_same_epoch_everywhere) {
  auto cfg = base_config();
  cfg["max_epochs"] = 8;
  std::string dir;
  // Per-rank losses differ (different shards); the merged history does not.
  auto r = train(cfg, "--nproc-per-node 2 --timeout 60 --plugin probe_callback:dump=true,stop_below=0.6", dir);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  auto h0 = load_json(dir + "/probe_history_rank0.json");
  auto h1 = load_json(dir + "/probe_history_rank1.json");
  BOOST_TEST(h0.size() < 8u, "the threshold must be reached");
  BOOST_TEST(h0.size() == h1.size());
  BOOST_TEST(h0.back()["probe_stop_epoch"] == h1.back()["probe_stop_epoch"]);
  // Rank losses differ within an epoch: the decision is not trivially equal.
  const auto& batches = h0[0]["batches"];
  BOOST_TEST(batches[0]["train_loss"] != batches[batches.size() / 2]["train_loss"]);
}

BOOST_AUTO_TEST_CASE(a_stop_requested_by_one_rank_stops_all) {
  auto cfg = base_config();
  cfg["max_epochs"] = 6;
  std::string dir;
  auto r = train(cfg, "--nproc-per-node 2 --timeout 60 --plugin probe_callback:dump=true,stop_at=2,stop_rank=1", dir);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(load_json(dir + "/probe_history_rank0.json").size() == 2u);
  BOOST_TEST(load_json(dir + "/probe_history_rank1.json").size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_parameter_without_gradient_does_not_stall_the_reduction) {
  auto cfg = base_config();
  cfg["model"]["unused"] = true;
  std::string dir;
  auto r = train(cfg, "--nproc-per-node 2 --timeout 30 --plugin probe_callback:dump=true", dir);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  auto p0 = load_tensors(dir + "/probe_params_rank0.pt");
  auto p1 = load_tensors(dir + "/probe_params_rank1.pt");
  BOOST_REQUIRE(p0.size() == 6u);
  for (std::size_t i = 0; i < p0.size(); ++i) BOOST_TEST(torch::equal(p0[i], p1[i]));
}

BOOST_AUTO_TEST_CASE(gradient_accumulation_matches_one_larger_batch) {
  std::vector<std::vector<torch::Tensor>> finals;
  for (int accumulate : {1, 2}) {
    auto cfg = base_config();
    cfg["batch_size"] = 32 / accumulate;
    cfg["accumulate_steps"] = accumulate;
    cfg["optimizer"] = {{"name", "sgd"}, {"lr", 0.05}};
    std::string dir;
    auto r = train(cfg, "--nproc-per-node 2 --timeout 60 --plugin probe_callback:dump=true", dir);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    finals.push_back(load_tensors(dir + "/probe_params_rank0.pt"));
  }
  for (std::size_t i = 0; i < finals[0].size(); ++i)
    BOOST_TEST(torch::allclose(finals[0][i], finals[1][i], 1e-4, 1e-5), "parameter " << i);
}

BOOST_AUTO_TEST_CASE(validation_metrics_equal_the_single_process_metrics) {
  std::vector<nlohmann::json> epochs;
  std::vector<nlohmann::json> results;
  for (int n : {1, 2}) {
    auto cfg = base_config();
    cfg["max_epochs"] = 1;
    cfg["valid_split"] = 0.3;  // 153 samples: not divisible by 2 ranks
    std::string dir;
    auto r = train(cfg, (n == 1 ? std::string() : "--nproc-per-node 2 --timeout 60 ") +
                            "--plugin probe_callback:freeze=true", dir);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    epochs.push_back(load_json(dir + "/history.json")[0]);
    results.push_back(load_json(dir + "/results.json"));
  }
  for (const char* key : {"valid_loss", "valid_acc"})
    BOOST_TEST(epochs[0][key].get<double>() == epochs[1][key].get<double>(),
               boost::test_tools::tolerance(1e-6));
  BOOST_TEST(results[0]["test_accuracy"].get<double>() == results[1]["test_accuracy"].get<double>());
  BOOST_TEST(results[1]["test_samples"].get<int>() == 128);
}

BOOST_AUTO_TEST_CASE(callbacks_reach_the_users_model_under_ddp_and_log_once) {
  auto cfg = base_config();
  cfg["callbacks"] = {{{"plugin", "print_log"}}};
  cfg["model"]["tag"] = "mine";
  std::string dir;
  auto r = train(cfg, "--nproc-per-node 2 --timeout 60 --plugin probe_callback:use_model=true", dir);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(load_json(dir + "/history.json").back()["probe_tag"].get<std::string>() == "mine");
  // One epoch table, from rank 0.
  std::size_t headers = 0;
  for (std::size_t pos = 0; (pos = r.out.find("train_loss", pos)) != std::string::npos; ++pos) ++headers;
  BOOST_TEST(headers == 1u, r.out);
}

BOOST_AUTO_TEST_CASE(a_failing_worker_stops_the_run_with_a_summary) {
  auto cfg = base_config();
  cfg["max_epochs"] = 5;
  std::string dir;
  auto r = train(cfg, "--nproc-per-node 2 --timeout 30 --plugin probe_callback:fail_at=2,fail_rank=1,dump=true",
                 dir);
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(contains(r.err, "worker rank 1"), r.err);
  BOOST_TEST(contains(r.err, "exit code 1"), r.err);
  BOOST_TEST(contains(r.err, "probe failure on rank 1"), r.err);
  // The failing rank's callbacks heard of the failure (on_exception) before it
  // left: after epoch 1's hooks and epoch 2's begin, with the error's line.
  const std::string failure = test::read_text(dir + "/probe_failure_rank1.txt");
  const std::string events = failure.substr(0, failure.find('\n'));
  BOOST_TEST(events.rfind("TE", 0) == 0, failure);  // on_train_begin, on_epoch_begin(1), ...
  BOOST_TEST((events.size() > 3 && events.compare(events.size() - 3, 3, "eEX") == 0), failure);
  BOOST_TEST(failure.substr(events.size() + 1) == "probe failure on rank 1\n", failure);
}

BOOST_AUTO_TEST_CASE(workers_started_by_another_launcher_run_without_ours) {
  const int port = test::free_port();
  auto r = run_two("ext", [&](int rank) {
    return "WORLD_SIZE=2 RANK=" + std::to_string(rank) + " LOCAL_RANK=" + std::to_string(rank) +
           " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port);
  });
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, logs_of("ext"));
  expect_ranks_agree(tmp.str("ext"));
  expect_launched_by(tmp.str("ext"), "RANK and WORLD_SIZE, no launcher named (2 processes)");
}

// torchrun's default, the static rendezvous: its agent already serves the
// store at MASTER_ADDR:MASTER_PORT, so rank 0 connects to it instead of serving.
BOOST_AUTO_TEST_CASE(workers_started_by_torchrun_run_as_one) {
  const std::string python = SKEIN_TEST_PYTHON;
  if (std::system((python + " -c 'import torch.distributed.run' > /dev/null 2>&1").c_str()) != 0) {
    BOOST_WARN_MESSAGE(false, "torchrun test skipped: no torch for " + python + " (python3-torch)");
    return;
  }
  const std::string log = tmp.str("torchrun.log");
  // -r 2 -t 2: torch 1.13's torchrun on Python 3.11 needs them.
  auto r = test::run(test::in_private_network("SKEIN_TIMEOUT_S=60 " + python +
                                              " -m torch.distributed.run --nproc_per_node 2 -r 2 -t 2"
                                              " --master_port " + std::to_string(test::free_port()) +
                                              " --no_python " + kSkein + external_train_args("torchrun") +
                                              " > " + log + " 2>&1"),
                     240);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, test::read_text(log));
  expect_ranks_agree(tmp.str("torchrun"));
  expect_launched_by(tmp.str("torchrun"), "torchrun (the agent's store, restart 0)");
}

// Two tasks on one node as srun starts them: Slurm's variables alone, no
// RANK or WORLD_SIZE. The master is the node list's first host; the port is
// the job's.
BOOST_AUTO_TEST_CASE(tasks_started_by_srun_run_as_one) {
  auto r = run_two("srun", [&](int task) { return srun_env(task, 1, 2); });
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, logs_of("srun"));
  expect_ranks_agree(tmp.str("srun"));
  expect_launched_by(tmp.str("srun"), "slurm (job 4242, 2 tasks on 1 node, master localhost:" + slurm_port + ")");
}

// One srun task per node, each starting its node's two workers with `skein
// train --nproc-per-node 2`: the nodes, the node rank and the master come
// from Slurm's variables. Both "nodes" are this machine.
BOOST_AUTO_TEST_CASE(srun_tasks_start_their_nodes_workers_with_skein_train) {
  auto r = run_two("srun_nodes", [&](int task) { return srun_env(task, 2, 1); },
                   " --nproc-per-node 2 --timeout 60 --plugin ddp:gloo_host=127.0.0.1");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, logs_of("srun_nodes"));
  expect_ranks_agree(tmp.str("srun_nodes"));
  BOOST_TEST(load_json(tmp.str("srun_nodes") + "/run.json")["nnodes"].get<int>() == 2);
  expect_launched_by(tmp.str("srun_nodes"), "skein train (4 processes on 2 nodes, restart 0)");
}

// A variable that disagrees with the launcher's, or a malformed one, stops
// the worker at once with one line naming it, and leaves no run directory.
BOOST_AUTO_TEST_CASE(launcher_variables_that_disagree_are_one_error_line) {
  const std::string srun = "env SLURM_JOB_ID=7 SLURM_PROCID=0 SLURM_STEP_NUM_TASKS=2 SLURM_STEP_NODELIST=";
  test::expect_one_error(test::run(srun + "n1 WORLD_SIZE=4 " + kSkein + external_train_args("disagree")), 2,
                         {"environment variables disagree: WORLD_SIZE=4 but SLURM_STEP_NUM_TASKS=2"});
  test::expect_one_error(test::run(srun + "'gpu[3-1]' " + kSkein + external_train_args("disagree")), 2,
                         {"SLURM_STEP_NODELIST='gpu[3-1]' is not a Slurm host list"});
  BOOST_TEST(!boost::filesystem::exists(tmp.str("disagree")));
}

// A master address that does not resolve, or is no host name at all (100 KB),
// stops a worker, and a node's launcher, at once with one short line naming
// where it came from: libtorch's TCPStore would retry it until the timeout,
// warning with the whole name at every try.
BOOST_AUTO_TEST_CASE(a_master_address_that_cannot_be_reached_is_one_line_at_once) {
  const std::string port = std::to_string(test::free_port());
  const std::string worker = "env WORLD_SIZE=2 RANK=1 MASTER_PORT=" + port + " SKEIN_TIMEOUT_S=120 MASTER_ADDR=";
  for (const std::string& host : {std::string("no-such-host.invalid"), std::string(100000, 'h')}) {
    const auto r = test::run(worker + host + " " + kSkein + external_train_args("unresolved"), 30);
    test::expect_one_error(r, 2, {"environment variable MASTER_ADDR='" + host.substr(0, 20)});
    BOOST_TEST(r.err.size() < 600u, r.err.substr(0, 600));
  }
  const auto node = test::run(kSkein + external_train_args("unresolved") +
                                  " --nproc-per-node 1 --nnodes 2 --node-rank 1 --master-port " + port +
                                  " --timeout 120 --master-addr no-such-host.invalid",
                              30);
  test::expect_one_error(node, 2, {"--master-addr='no-such-host.invalid' does not resolve"});
  BOOST_TEST(!boost::filesystem::exists(tmp.str("unresolved")));
}

// Two Kubeflow pods (PyTorchJob, nprocPerNode 2) on loopback: a worker
// started directly in a pod is told to start the pod's workers instead, and
// `skein train --nproc-per-node 2` in each pod takes its node's place (nodes,
// node rank, master) from the pod's variables.
BOOST_AUTO_TEST_CASE(kubeflow_pods_start_their_workers_with_skein_train) {
  const std::string port = std::to_string(test::free_port());
  auto pod = [&](int index) {
    const std::string i = std::to_string(index);
    return "MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " WORLD_SIZE=4 RANK=" + i +
           " PET_NNODES=2 PET_NPROC_PER_NODE=2 PET_NODE_RANK=" + i + " PET_MASTER_ADDR=127.0.0.1 PET_MASTER_PORT=" +
           port;
  };
  test::expect_one_error(test::run("env " + pod(0) + " " + kSkein + external_train_args("pod_alone")), 2,
                         {"PET_NPROC_PER_NODE=2", "skein train --nproc-per-node 2"});

  auto r = run_two("pods", pod, " --nproc-per-node 2 --timeout 60 --plugin ddp:gloo_host=127.0.0.1");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, logs_of("pods"));
  expect_ranks_agree(tmp.str("pods"));
  BOOST_TEST(load_json(tmp.str("pods") + "/run.json")["nnodes"].get<int>() == 2);
  expect_launched_by(tmp.str("pods"), "skein train (4 processes on 2 nodes, restart 0)");
}

// Open MPI's mpirun on one node: MASTER_ADDR defaults to 127.0.0.1.
BOOST_AUTO_TEST_CASE(processes_started_by_mpirun_run_as_one) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) {
    BOOST_WARN_MESSAGE(false, "mpirun test skipped: no mpirun here (scripts/setup.sh installs openmpi-bin)");
    return;
  }
  const std::string port = std::to_string(test::free_port());
  const std::string log = tmp.str("mpirun.log");
  auto r = test::run(test::in_private_network("mpirun --allow-run-as-root --oversubscribe -np 2 -x MASTER_PORT=" +
                                              port + " -x SKEIN_TIMEOUT_S=60 " + kSkein +
                                              external_train_args("mpi") + " > " + log + " 2>&1"),
                     240);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, test::read_text(log));
  expect_ranks_agree(tmp.str("mpi"));
  expect_launched_by(tmp.str("mpi"), "open mpi (2 processes, master 127.0.0.1:" + port + ")");
}

// Two "machines": network namespaces joined by a veth pair, made inside a
// private network and mount namespace so the host is untouched.
BOOST_AUTO_TEST_CASE(two_hosts_train_as_one_run) {
  auto cfg = base_config();
  cfg["history"]["plugin"] = "tcpstore";
  const std::string cfg_path = tmp.str("two.json");
  test::write_text(cfg_path, cfg.dump());
  const std::string dir = tmp.str("two");
  auto node = [&](int rank, const std::string& ip) {
    return "ip netns exec host" + std::to_string(rank) + " " + kSkein + " train --config " +
           cfg_path + " --run-dir " + dir + kProbe +
           " --plugin probe_callback:dump=true --plugin ddp:gloo_host=" + ip +
           " --nnodes 2 --node-rank " + std::to_string(rank) +
           " --nproc-per-node 1 --master-addr 10.213.7.1 --master-port 29600 --timeout 60 > " +
           tmp.str("node" + std::to_string(rank) + ".log") + " 2>&1";
  };
  const std::string script = tmp.str("two_hosts.sh");
  test::write_text(script,
                   test::two_hosts_setup("10.213.7") + node(0, "10.213.7.1") + " &\n" + node(1, "10.213.7.2") + " &\n" +
                       "wait %1; a=$?; wait %2; b=$?; [ $a = 0 ] && [ $b = 0 ]\n");
  auto r = test::run("unshare -nm --propagation private sh " + script, 240);
  if (r.exit_code == 3) {
    BOOST_WARN_MESSAGE(false, "two-host test skipped: this machine does not allow network "
                              "namespaces with veth pairs (" << r.err << ")");
    return;
  }
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, test::read_text(tmp.str("node0.log")) + "\n" +
                                              test::read_text(tmp.str("node1.log")));
  auto run = load_json(dir + "/run.json");
  BOOST_TEST(run["consistent"].get<bool>());
  BOOST_TEST(run["nnodes"].get<int>() == 2);
  BOOST_TEST(test::read_text(dir + "/probe_history_rank0.json") ==
             test::read_text(dir + "/probe_history_rank1.json"));
  auto p0 = load_tensors(dir + "/probe_params_rank0.pt");
  auto p1 = load_tensors(dir + "/probe_params_rank1.pt");
  for (std::size_t i = 0; i < p0.size(); ++i) BOOST_TEST(torch::equal(p0[i], p1[i]));
}

BOOST_AUTO_TEST_SUITE_END()
