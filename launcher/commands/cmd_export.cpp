// skein export RUN_DIR --format torchscript|pt2|state_dict --out FILE [--checkpoint NAME] [--no-input-scaling]
// writes the model to FILE and what its inputs must be to FILE.json.
#include <iostream>

#include <boost/filesystem.hpp>

#include "command_options.hpp"
#include "commands.hpp"
#include "output_file.hpp"
#include "skein/io/atomic_file.hpp"
#include "skein/training/run/model_io.hpp"
#include "skein/errors.hpp"

namespace skein::launcher {

int cmd_export(const std::vector<std::string>& args) {
  ExportArgs parsed;
  if (!parse_export_args(args, parsed)) return 0;  // --help
  allow_in_environment(parsed.script);
  const std::string& format = parsed.format;
  const std::string& out = parsed.out;
  if (format != "torchscript" && format != "pt2" && format != "state_dict")
    throw ConfigError("--format '" + format + "': expected torchscript, pt2 or state_dict");

  check_output_file(out, "--out");
  // Beside a file only: a pipe or a device (--out /dev/stdout) has no place beside it.
  boost::system::error_code ec;
  const auto status = boost::filesystem::status(out, ec);
  const bool beside = !boost::filesystem::exists(status) || boost::filesystem::is_regular_file(status);
  const std::string about = out + ".json";
  if (beside) check_companion_file(about, "--out (its JSON)");
  core::TrainedModel trained(parsed.model);
  const bool torchscript = format == "torchscript";
  write_file_atomic(out, torchscript ? trained.torchscript() : format == "pt2" ? trained.pt2() : trained.state_dict());
  if (beside) {
    nlohmann::json record = trained.input_record(format != "state_dict");
    record["format"] = format;
    record["checkpoint"] = trained.checkpoint_dir();
    write_file_atomic(about, record.dump(2) + "\n");
  }
  std::cout << "Exported " << trained.checkpoint_dir() << " as " << format << " to " << out
            << (beside ? " (inputs: " + about + ")" : std::string()) << std::endl;
  return 0;
}

}  // namespace skein::launcher
