// skein predict RUN_DIR --inputs FILE.npy --out FILE.npy [--checkpoint NAME] [--batch-size N]
#include <iostream>

#include "command_options.hpp"
#include "commands.hpp"
#include "output_file.hpp"
#include "skein/io/atomic_file.hpp"
#include "skein/training/run/model_io.hpp"
#include "skein/errors.hpp"
#include "skein/io/npy.hpp"

namespace skein::launcher {

int cmd_predict(const std::vector<std::string>& args) {
  PredictArgs parsed;
  if (!parse_predict_args(args, parsed)) return 0;  // --help
  allow_in_environment(parsed.script);
  const std::string& inputs_path = parsed.inputs;
  const std::string& out = parsed.out;
  const std::int64_t batch_size = parsed.batch_size;
  if (batch_size <= 0) throw ConfigError("--batch-size: must be positive, got " + std::to_string(batch_size));

  check_output_file(out, "--out");
  check_not_the_input(out, inputs_path, "--inputs");
  torch::Tensor inputs;
  try {
    inputs = read_npy(inputs_path);
  } catch (const std::exception& e) {
    throw ConfigError(std::string("--inputs: ") + e.what());
  }
  core::TrainedModel trained(parsed.model);
  const torch::Tensor outputs = trained.predict(inputs, batch_size);
  write_file_atomic(out, npy_bytes(outputs));
  std::cout << "Wrote outputs " << outputs.sizes() << " of " << trained.checkpoint_dir() << " to " << out
            << std::endl;
  return 0;
}

}  // namespace skein::launcher
