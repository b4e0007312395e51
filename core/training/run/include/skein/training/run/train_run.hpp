#pragma once
// `skein train` and `skein plugins` as library calls (no torch in this header,
// so the launcher compiles fast).
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "skein/training/config/config.hpp"  // TrainRequest

namespace skein::core {

struct TrainOutcome {
  bool is_main = true;  // rank 0 (the one that reports)
  std::string run_dir;
  long epochs = 0;
  std::string stop_reason;
  std::optional<double> test_accuracy;
  std::optional<double> test_loss;
};

// Loads plugins, resolves the config, creates every plugin, and only then
// takes the run directory (replacing a previous run there on --overwrite);
// trains, and writes config.json, config_history.jsonl, history.json,
// train.log and results.json. A start that fails before training leaves
// nothing behind.
SKEIN_EXPORT TrainOutcome run_training(const TrainRequest& request);

// For --resume DIR: the run's config.json becomes the config file (flags and
// --set still apply on top), and the run directory is DIR. Throws ConfigError
// when DIR holds no run or no complete checkpoint.
SKEIN_EXPORT void prepare_resume(TrainRequest& request);

// Picks a fresh run directory under `parent` named after the config file.
SKEIN_EXPORT std::string new_run_dir(const std::string& parent, const std::string& config_path);

}  // namespace skein::core
