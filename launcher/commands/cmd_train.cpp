#include <cstdlib>
#include <iostream>

#include "command_options.hpp"
#include "commands.hpp"
#include "launch.hpp"
#include "skein/training/run/train_run.hpp"
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
    // Workers get the same request (train_request_args), without the launcher's flags.
    if (!req.resume_dir.empty()) core::prepare_resume(req);  // checks before any worker starts
    launch_opts.request = req;
    return launch(launch_opts);
  }
  if (!req.resume_dir.empty()) core::prepare_resume(req);
  core::TrainOutcome outcome = core::run_training(req);
  if (outcome.is_main) std::cout << "Run saved in " << outcome.run_dir << std::endl;
  return 0;
}

}  // namespace skein::launcher
