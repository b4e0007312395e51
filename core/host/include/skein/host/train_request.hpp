#pragma once
// What `skein train` (or a session) asks for: where the config comes from
// (a file, --plugin and --set flags) and the run directory. Torch-free: the
// skein executable parses it; libskein_core resolves it (training/config.hpp).
#include <string>
#include <vector>

#include "skein/detail/json.hpp"

namespace skein::core {

struct ConfigSources {
  std::string config_path;           // may be empty: defaults + flags only
  std::vector<std::string> plugins;  // NAME[:key=value,...] or PATH.so[:key=value,...]
  std::vector<std::string> sets;     // dotted.key=VALUE
  nlohmann::json base;               // when set: used instead of reading config_path (which names it)
  bool data_required = true;         // false for a session: its program may feed the batches
  // Processes of the run: with more than one and no parallel plugin named
  // anywhere, the run uses ddp (RunConfig::parallel_chosen says so).
  int world_size = 1;
};

// What `skein train` (or a session) asks for: the config's sources and the run directory.
struct TrainRequest {
  ConfigSources sources;
  std::string run_dir;                   // empty: a new folder under runs/
  std::string resume_dir;                // continue the run in this directory
  bool overwrite = false;                // replace a run already in run_dir
  std::vector<std::string> plugin_dirs;  // scanned after the default ones
};

}  // namespace skein::core
