#include <cstdlib>
#include <iostream>

#include "command_options.hpp"
#include "commands.hpp"
#include "launch.hpp"
#include "skein/training/train_run.hpp"
#include "skein/host/env_vars.hpp"
#include "skein/errors.hpp"

namespace skein::launcher {

int cmd_train(const std::vector<std::string>& args) {
  TrainArgs parsed;
  if (!parse_train_args(args, parsed)) return 0;  // --help
  core::TrainRequest& req = parsed.request;
  LaunchOptions& launch_opts = parsed.launch;
  const bool allow_outside = parsed.allow_outside;
  // Plugins (and worker processes, which inherit it) read the opt-in from the environment.
  if (allow_outside) ::setenv(skein::env::kAllowOutsideRunDir, "1", 1);
  allow_in_environment(parsed.script);

  if (parsed.distributed) {
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
