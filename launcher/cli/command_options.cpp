#include "command_options.hpp"

#include <cstdlib>
#include <iostream>

#include <boost/program_options.hpp>

#include "skein/host/config_keys.hpp"
#include "skein/host/launcher_env.hpp"
#include "skein/host/env_vars.hpp"

namespace po = boost::program_options;

namespace skein::launcher {

namespace {

// RUN_DIR (also the first positional argument), --checkpoint, --plugin-dir,
// --device: what export and predict share.
void add_trained_model_options(po::options_description& opts, core::TrainedModelOptions& model,
                               const char* device_default) {
  model.device = device_default;
  opts.add_options()("device", po::value(&model.device),
                     (std::string("auto, cpu, cuda or cuda:N, as the config's \"device\" (default ") +
                      device_default + ")")
                         .c_str())("run-dir", po::value(&model.run_dir)->required(),
                     "the run directory (also the first positional argument)")(
      "checkpoint", po::value(&model.checkpoint),
      "checkpoint name under RUN_DIR/checkpoints (default: the newest epoch_*)")(
      "plugin-dir", po::value(&model.plugin_dirs)->composing(), "also scan this directory for plugins")(
      "no-input-scaling", po::bool_switch()->notifier([&model](bool off) { model.input_scaling = !off; }),
      "inputs are what the model itself takes: the dataset's scaling and standardize are neither applied "
      "nor exported (by default inputs are raw, as the dataset's files hold them)");
}

void add_script_options(po::options_description& opts, ScriptPermissions& script) {
  opts.add_options()("allow-script-file-ops", po::bool_switch(&script.file_ops),
                     "let a TorchScript model call operators that reach files or processes (torch.from_file, "
                     "torch.save, rpc): only for files you trust")(
      "allow-changed-script", po::bool_switch(&script.changed),
      "use a TorchScript model file that changed since the checkpoint was written (a warning instead of an error)");
}

// --help: prints `usage` and the options, and returns false (nothing to run).
// Otherwise checks the required options (po::notify) and returns true.
bool finish(po::variables_map& vm, const char* usage, const po::options_description& opts) {
  if (vm.count("help")) {
    std::cout << usage << opts;
    return false;
  }
  po::notify(vm);
  return true;
}

// The config file's top-level keys, for train --help (the README's "Config
// reference" says more; `skein plugins describe NAME` lists a plugin's options).
void print_config_keys(std::ostream& out) {
  out << "\nconfig keys (JSON; --set KEY=VALUE overrides one):\n";
  for (const auto& spec : core::top_level_schema()) {
    std::string head = std::string("  ") + spec.name + " (" + option_type_name(spec.type) + ", default " +
                       (spec.default_json ? spec.default_json : "required") + ")";
    out << head << "\n      " << (spec.doc ? spec.doc : "") << "\n";
  }
}

// In a Kubeflow pod, or an srun task alone on its node, `skein train
// --nproc-per-node N` starts that node's workers: the node's place in the run
// (nodes, node rank, master) comes from the cluster's variables unless the
// command line says.
void take_node_from_cluster(const po::variables_map& vm, LaunchOptions& o) {
  const core::LauncherEnv node = core::read_launcher_env(core::process_env());
  const bool one_per_node = node.launcher == core::Launcher::kubeflow ||
                            (node.launcher == core::Launcher::slurm && node.world_size == node.nnodes);
  if (!one_per_node) return;
  if (!vm.count("nnodes")) o.nnodes = node.nnodes;
  if (!vm.count("node-rank")) o.node_rank = node.node_rank;
  if (!vm.count("master-addr") && !node.master_addr.empty()) {
    o.master_addr = node.master_addr;
    o.master_addr_from = "environment variable " + node.master_addr_from;
  }
  if (!vm.count("master-port") && node.master_port != 0) o.master_port = node.master_port;
}

po::variables_map parse_with_run_dir(const std::vector<std::string>& args, const po::options_description& opts) {
  po::positional_options_description positional;
  positional.add("run-dir", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(positional).run(), vm);
  return vm;
}

}  // namespace

bool parse_train_args(const std::vector<std::string>& args, TrainArgs& out) {
  core::TrainRequest& req = out.request;
  LaunchOptions& launch_opts = out.launch;
  po::options_description opts("skein train options");
  opts.add_options()("help,h", "show this help")(
      "config,c", po::value(&req.sources.config_path), "JSON config file (also the first positional argument)")(
      "plugin,p", po::value(&req.sources.plugins)->composing(),
      "activate a plugin: NAME[:key=value,...] or PATH.so[:key=value,...] (repeatable)")(
      "set,s", po::value(&req.sources.sets)->composing(),
      "override a config value: dotted.key=VALUE, VALUE in JSON (repeatable)")(
      "run-dir", po::value(&req.run_dir), "output directory (default: a new folder under runs/)")(
      "resume", po::value(&req.resume_dir),
      "continue the run in this directory from its newest checkpoint")(
      "overwrite", po::bool_switch(&req.overwrite),
      "replace a run already in --run-dir (once the new config is known to be good; only what skein wrote is removed)")(
      "allow-outside-run-dir", po::bool_switch(&out.allow_outside),
      "let plugin options name files outside the run directory (absolute paths, '..', symlinks)")(
      "plugin-dir", po::value(&req.plugin_dirs)->composing(),
      "also scan this directory for plugins (repeatable)");
  add_script_options(opts, out.script);
  po::options_description dist("distributed (starts worker processes, torchrun's conventions)");
  dist.add_options()("nproc-per-node", po::value(&launch_opts.nproc_per_node),
                     "worker processes on this machine")(
      "nnodes", po::value(&launch_opts.nnodes), "machines in the run (default 1)")(
      "node-rank", po::value(&launch_opts.node_rank), "this machine's index, 0 hosts the store")(
      "master-addr", po::value(&launch_opts.master_addr), "address of node 0 (default 127.0.0.1)")(
      "master-port", po::value(&launch_opts.master_port),
      "port of the run's TCPStore on node 0 (needed with --nnodes > 1)")(
      "timeout", po::value(&launch_opts.timeout_s),
      "seconds any store wait or collective may take (default 300)")(
      "max-restarts", po::value(&launch_opts.max_restarts),
      "on a worker failure, restart all workers from the newest checkpoint, up to this many times "
      "(default 0)")(
      "quiet-ranks", po::bool_switch(&launch_opts.quiet_ranks), "show only rank 0's output (and errors)");
  opts.add(dist);
  // `skein train FILE` is --config FILE; without this, Boost would drop the
  // word and the run would fail later on a missing key.
  po::positional_options_description positional;
  positional.add("config", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(positional).run(), vm);
  if (!finish(vm,
              "usage: skein train --config FILE [--plugin SPEC]... [--set KEY=VALUE]... "
              "[--run-dir DIR] [--nproc-per-node N ...]\n\n",
              opts)) {
    print_config_keys(std::cout);
    return false;
  }
  out.distributed = vm.count("nproc-per-node") || vm.count("nnodes") || vm.count("max-restarts");
  if (vm.count("nproc-per-node")) take_node_from_cluster(vm, launch_opts);
  return true;
}

std::vector<std::string> train_request_args(const core::TrainRequest& req) {
  // --flag=VALUE: a value that starts with '-' stays a value.
  std::vector<std::string> args;
  auto flag = [&](const char* name, const std::string& value) { args.push_back(std::string(name) + "=" + value); };
  if (!req.sources.config_path.empty()) flag("--config", req.sources.config_path);
  if (!req.resume_dir.empty()) flag("--resume", req.resume_dir);
  if (!req.run_dir.empty()) flag("--run-dir", req.run_dir);
  if (req.overwrite) args.push_back("--overwrite");
  for (const auto& p : req.sources.plugins) flag("--plugin", p);
  for (const auto& s : req.sources.sets) flag("--set", s);
  for (const auto& d : req.plugin_dirs) flag("--plugin-dir", d);
  return args;
}

bool parse_export_args(const std::vector<std::string>& args, ExportArgs& out) {
  po::options_description opts("skein export options");
  add_trained_model_options(opts, out.model, "cpu");  // a file that loads anywhere
  opts.add_options()("help,h", "show this help")(
      "format", po::value(&out.format)->required(),
      "torchscript (Python: torch.jit.load), pt2 (Python: torch.export.load; a model trained from a .pt2) or "
      "state_dict (Python: torch.load)")(
      "out", po::value(&out.out)->required(), "file to write");
  add_script_options(opts, out.script);
  po::variables_map vm = parse_with_run_dir(args, opts);
  return finish(vm,
                "usage: skein export RUN_DIR --format torchscript|pt2|state_dict --out FILE [--checkpoint NAME] "
                "[--no-input-scaling]\n\nwrites FILE and, beside it, FILE.json: the input shape and how raw "
                "inputs are scaled\n\n",
                opts);
}

bool parse_predict_args(const std::vector<std::string>& args, PredictArgs& out) {
  po::options_description opts("skein predict options");
  add_trained_model_options(opts, out.model, "auto");
  opts.add_options()("help,h", "show this help")(
      "inputs", po::value(&out.inputs)->required(), ".npy file of inputs [N, ...] (numpy.save)")(
      "out", po::value(&out.out)->required(), ".npy file to write the outputs to")(
      "batch-size", po::value(&out.batch_size), "samples per forward pass (default 256)");
  add_script_options(opts, out.script);
  po::variables_map vm = parse_with_run_dir(args, opts);
  return finish(vm, "usage: skein predict RUN_DIR --inputs FILE.npy --out FILE.npy [--checkpoint NAME] "
                "[--batch-size N] [--no-input-scaling]\n\n",
                opts);
}

void allow_in_environment(const ScriptPermissions& script) {
  if (script.file_ops) ::setenv(env::kAllowScriptFileOps, "1", 1);
  if (script.changed) ::setenv(env::kAllowChangedScript, "1", 1);
}

}  // namespace skein::launcher
