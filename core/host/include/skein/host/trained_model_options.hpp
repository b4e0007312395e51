#pragma once
// Which trained model `skein export` and `skein predict` use. Torch-free: the
// `skein` executable parses these options without loading libtorch.
#include <string>
#include <vector>

namespace skein::core {

struct TrainedModelOptions {
  std::string run_dir;
  std::string checkpoint;                // a name under RUN_DIR/checkpoints; "" for the newest epoch_*
  std::vector<std::string> plugin_dirs;  // as skein train's --plugin-dir
  std::string device = "cpu";            // as the config's "device": auto, cpu, cuda, cuda:N
  // Inputs are raw, as the dataset's files hold them: predict scales them and
  // an exported TorchScript module does, as training did (the dataset's own
  // scaling, then "standardize"). false (--no-input-scaling): inputs are what
  // the model itself takes.
  bool input_scaling = true;
};

}  // namespace skein::core
