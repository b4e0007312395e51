#pragma once
// A run's checkpoints directory as a whole (each checkpoint is written by
// trainer_checkpoint.cpp: into .tmp-NAME-PID, then renamed into place).
#include <string>

#include "skein/detail/export.hpp"

namespace skein::core {

// Removes what a crash left while a checkpoint was written under `root`
// (.tmp-* directories), restoring one that was being replaced (.old-*).
SKEIN_EXPORT void remove_partial_checkpoints(const std::string& root);

// The newest complete periodic checkpoint under `root` (epoch_*, or step_*
// written inside an epoch: the furthest into training), or "": what
// --resume and restarts continue from.
SKEIN_EXPORT std::string find_latest_checkpoint(const std::string& root);

// The model a run ended with (Trainer::write_final_model): model files and
// trainer.json only, no optimizer state, so never resumed from.
inline constexpr const char* kFinalModel = "final";

// The model export, predict and init_from take by default: `root`/final, or
// the newest periodic checkpoint when that holds a later complete epoch (a resumed run
// that crashed after the last final was written); "" when there is neither.
SKEIN_EXPORT std::string find_model_checkpoint(const std::string& root);

}  // namespace skein::core
