// skein export RUN_DIR --format torchscript|state_dict --out FILE [--checkpoint NAME]
#include <iostream>

#include "command_options.hpp"
#include "commands.hpp"
#include "output_file.hpp"
#include "skein/io/atomic_file.hpp"
#include "skein/training/model_io.hpp"
#include "skein/errors.hpp"

namespace skein::launcher {

int cmd_export(const std::vector<std::string>& args) {
  ExportArgs parsed;
  if (!parse_export_args(args, parsed)) return 0;  // --help
  allow_in_environment(parsed.script);
  const std::string& format = parsed.format;
  const std::string& out = parsed.out;
  if (format != "torchscript" && format != "state_dict")
    throw ConfigError("--format '" + format + "': expected torchscript or state_dict");

  check_output_file(out, "--out");
  core::TrainedModel trained(parsed.model);
  write_file_atomic(out, format == "torchscript" ? trained.torchscript() : trained.state_dict());
  std::cout << "Exported " << trained.checkpoint_dir() << " as " << format << " to " << out << std::endl;
  return 0;
}

}  // namespace skein::launcher
