#pragma once
// A run's checkpoints directory as a whole (each checkpoint is written by
// trainer_checkpoint.cpp: into .tmp-NAME-PID, then renamed into place).
#include <string>

#include "skein/export.hpp"

namespace skein::core {

// Removes what a crash left while a checkpoint was written under `root`
// (.tmp-* directories), restoring one that was being replaced (.old-*).
SKEIN_EXPORT void remove_partial_checkpoints(const std::string& root);

// The newest complete checkpoint (an epoch_* directory) under `root`, or "".
SKEIN_EXPORT std::string find_latest_checkpoint(const std::string& root);

}  // namespace skein::core
