#include "trained_model_args.hpp"

namespace po = boost::program_options;

namespace skein::launcher {

void add_trained_model_options(po::options_description& opts, core::TrainedModelOptions& model) {
  opts.add_options()("run-dir", po::value(&model.run_dir)->required(),
                     "the run directory (also the first positional argument)")(
      "checkpoint", po::value(&model.checkpoint),
      "checkpoint name under RUN_DIR/checkpoints (default: the newest epoch_*)")(
      "plugin-dir", po::value(&model.plugin_dirs)->composing(), "also scan this directory for plugins");
}

po::variables_map parse_with_run_dir(const std::vector<std::string>& args, const po::options_description& opts) {
  po::positional_options_description positional;
  positional.add("run-dir", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(positional).run(), vm);
  return vm;
}

}  // namespace skein::launcher
