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
};

}  // namespace skein::core
