// skein export RUN_DIR --format torchscript|state_dict --out FILE [--checkpoint NAME]
#include <iostream>

#include <boost/program_options.hpp>

#include "commands.hpp"
#include "trained_model_args.hpp"
#include "skein/atomic_file.hpp"
#include "skein/core/model_io.hpp"
#include "skein/errors.hpp"

namespace po = boost::program_options;

namespace skein::launcher {

int cmd_export(const std::vector<std::string>& args) {
  core::TrainedModelOptions model;
  std::string format, out;
  po::options_description opts("skein export options");
  add_trained_model_options(opts, model);
  opts.add_options()("help,h", "show this help")(
      "format", po::value(&format)->required(),
      "torchscript (Python: torch.jit.load) or state_dict (Python: torch.load)")(
      "out", po::value(&out)->required(), "file to write");
  po::variables_map vm = parse_with_run_dir(args, opts);
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
