// skein export RUN_DIR --format torchscript|state_dict --out FILE [--checkpoint NAME]
#include <iostream>

#include <boost/program_options.hpp>

#include "commands.hpp"
#include "skein/atomic_file.hpp"
#include "skein/core/model_io.hpp"
#include "skein/errors.hpp"

namespace po = boost::program_options;

namespace skein::launcher {

int cmd_export(const std::vector<std::string>& args) {
  core::TrainedModelOptions model;
  std::string format, out;
  po::options_description opts("skein export options");
  opts.add_options()("help,h", "show this help")("run-dir", po::value(&model.run_dir)->required(),
                                                 "the run directory (also the first positional argument)")(
      "format", po::value(&format)->required(),
      "torchscript (Python: torch.jit.load) or state_dict (Python: torch.load)")(
      "out", po::value(&out)->required(), "file to write")(
      "checkpoint", po::value(&model.checkpoint),
      "checkpoint name under RUN_DIR/checkpoints (default: the newest epoch_*)")(
      "plugin-dir", po::value(&model.plugin_dirs)->composing(), "also scan this directory for plugins");
  po::positional_options_description positional;
  positional.add("run-dir", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(positional).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: skein export RUN_DIR --format torchscript|state_dict --out FILE [--checkpoint NAME]\n\n"
              << opts;
    return 0;
  }
  po::notify(vm);
  if (format != "torchscript" && format != "state_dict")
    throw ConfigError("--format '" + format + "': expected torchscript or state_dict");

  core::TrainedModel trained(model);
  write_file_atomic(out, format == "torchscript" ? trained.torchscript() : trained.state_dict());
  std::cout << "Exported " << trained.checkpoint_dir() << " as " << format << " to " << out << std::endl;
  return 0;
}

}  // namespace skein::launcher
