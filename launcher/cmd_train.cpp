#include <iostream>

#include <boost/program_options.hpp>

#include "commands.hpp"
#include "skein/core/run.hpp"

namespace po = boost::program_options;

namespace skein::launcher {

int cmd_train(const std::vector<std::string>& args) {
  core::TrainRequest req;
  po::options_description opts("skein train options");
  opts.add_options()("help,h", "show this help")(
      "config,c", po::value(&req.sources.config_path), "JSON config file")(
      "plugin,p", po::value(&req.sources.plugins)->composing(),
      "activate a plugin: NAME[:key=value,...] or PATH.so[:key=value,...] (repeatable)")(
      "set,s", po::value(&req.sources.sets)->composing(),
      "override a config value: dotted.key=VALUE, VALUE in JSON (repeatable)")(
      "run-dir", po::value(&req.run_dir), "output directory (default: a new folder under runs/)")(
      "plugin-dir", po::value(&req.plugin_dirs)->composing(),
      "also scan this directory for plugins (repeatable)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: skein train --config FILE [--plugin SPEC]... [--set KEY=VALUE]... "
                 "[--run-dir DIR]\n\n"
              << opts;
    return 0;
  }
  po::notify(vm);
  core::TrainOutcome outcome = core::run_training(req);
  std::cout << "Run saved in " << outcome.run_dir << std::endl;
  return 0;
}

}  // namespace skein::launcher
