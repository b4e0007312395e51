// skein predict RUN_DIR --inputs FILE.npy --out FILE.npy [--checkpoint NAME] [--batch-size N]
#include <iostream>

#include <boost/program_options.hpp>

#include "commands.hpp"
#include "trained_model_args.hpp"
#include "skein/atomic_file.hpp"
#include "skein/core/model_io.hpp"
#include "skein/errors.hpp"
#include "skein/npy.hpp"

namespace po = boost::program_options;

namespace skein::launcher {

int cmd_predict(const std::vector<std::string>& args) {
  core::TrainedModelOptions model;
  std::string inputs_path, out;
  std::int64_t batch_size = 256;
  po::options_description opts("skein predict options");
  add_trained_model_options(opts, model);
  opts.add_options()("help,h", "show this help")(
      "inputs", po::value(&inputs_path)->required(), ".npy file of inputs [N, ...] (numpy.save)")(
      "out", po::value(&out)->required(), ".npy file to write the outputs to")(
      "batch-size", po::value(&batch_size), "samples per forward pass (default 256)");
  po::variables_map vm = parse_with_run_dir(args, opts);
  if (vm.count("help")) {
    std::cout << "usage: skein predict RUN_DIR --inputs FILE.npy --out FILE.npy [--checkpoint NAME] "
                 "[--batch-size N]\n\n"
              << opts;
    return 0;
  }
  po::notify(vm);
  if (batch_size <= 0) throw ConfigError("--batch-size: must be positive, got " + std::to_string(batch_size));

  torch::Tensor inputs;
  try {
    inputs = read_npy(inputs_path);
  } catch (const std::exception& e) {
    throw ConfigError(std::string("--inputs: ") + e.what());
  }
  core::TrainedModel trained(model);
  const torch::Tensor outputs = trained.predict(inputs, batch_size);
  write_file_atomic(out, npy_bytes(outputs));
  std::cout << "Wrote outputs " << outputs.sizes() << " of " << trained.checkpoint_dir() << " to " << out
            << std::endl;
  return 0;
}

}  // namespace skein::launcher
