#include <cstdlib>
#include <iostream>

#include <boost/program_options.hpp>

#include "commands.hpp"
#include "launch.hpp"
#include "skein/core/run.hpp"
#include "skein/env_vars.hpp"
#include "skein/errors.hpp"

namespace po = boost::program_options;

namespace skein::launcher {

int cmd_train(const std::vector<std::string>& args) {
  core::TrainRequest req;
  LaunchOptions launch_opts;
  bool allow_outside = false;
  po::options_description opts("skein train options");
  opts.add_options()("help,h", "show this help")(
      "config,c", po::value(&req.sources.config_path), "JSON config file")(
      "plugin,p", po::value(&req.sources.plugins)->composing(),
      "activate a plugin: NAME[:key=value,...] or PATH.so[:key=value,...] (repeatable)")(
      "set,s", po::value(&req.sources.sets)->composing(),
      "override a config value: dotted.key=VALUE, VALUE in JSON (repeatable)")(
      "run-dir", po::value(&req.run_dir), "output directory (default: a new folder under runs/)")(
      "resume", po::value(&req.resume_dir),
      "continue the run in this directory from its newest checkpoint")(
      "overwrite", po::bool_switch(&req.overwrite),
      "replace a run already in --run-dir (once the new config is known to be good; only what skein wrote is removed)")(
      "allow-outside-run-dir", po::bool_switch(&allow_outside),
      "let plugin options name files outside the run directory (absolute paths, '..', symlinks)")(
      "plugin-dir", po::value(&req.plugin_dirs)->composing(),
      "also scan this directory for plugins (repeatable)");
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
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: skein train --config FILE [--plugin SPEC]... [--set KEY=VALUE]... "
                 "[--run-dir DIR] [--nproc-per-node N ...]\n\n"
              << opts;
    return 0;
  }
  po::notify(vm);
  // Plugins (and worker processes, which inherit it) read the opt-in from the environment.
  if (allow_outside) ::setenv(skein::env::kAllowOutsideRunDir, "1", 1);

  if (vm.count("nproc-per-node") || vm.count("nnodes") || vm.count("max-restarts")) {
    // Workers get the same request, without the launcher's flags.
    if (!req.resume_dir.empty()) core::prepare_resume(req);  // checks before any worker starts
    launch_opts.resume = !req.resume_dir.empty();
    if (!launch_opts.resume && !req.sources.config_path.empty())
      launch_opts.start_args = {"--config", req.sources.config_path};
    // Rank 0 replaces the previous run once every plugin was created.
    launch_opts.overwrite = req.overwrite;
    auto& common = launch_opts.common_args;
    for (const auto& p : req.sources.plugins) common.insert(common.end(), {"--plugin", p});
    for (const auto& s : req.sources.sets) common.insert(common.end(), {"--set", s});
    for (const auto& d : req.plugin_dirs) common.insert(common.end(), {"--plugin-dir", d});
    launch_opts.run_dir = req.run_dir;
    launch_opts.config_path = req.sources.config_path;
    return launch(launch_opts);
  }
  if (!req.resume_dir.empty()) core::prepare_resume(req);
  core::TrainOutcome outcome = core::run_training(req);
  if (outcome.is_main) std::cout << "Run saved in " << outcome.run_dir << std::endl;
  return 0;
}

}  // namespace skein::launcher
