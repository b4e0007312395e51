#pragma once
// A run's checkpoints directory as a whole (each checkpoint is written by
// trainer_checkpoint.cpp: into .tmp-NAME-PID, then renamed into place).
#include <string>
#include <vector>

#include "skein/detail/export.hpp"
#include "skein/run.hpp"

namespace skein::core {

// Removes what a crash left while a checkpoint was written under `root`
// (.tmp-* directories), restoring one that was being replaced (.old-*).
SKEIN_EXPORT void remove_partial_checkpoints(const std::string& root);

// The model a run ended with (Trainer::write_final_model): model files and
// trainer.json only, no optimizer state, so never resumed from.
inline constexpr const char* kFinalModel = "final";

// The complete checkpoint directly under `root` furthest into training (the
// checkpoint callback's epoch_* and step_*, a session's save_checkpoint
// names; never `final` or `best`), a periodic one among equals, or "":
// what --resume, a session's resume and restarts continue from. A
// checkpoint whose trainer.json is there but unreadable is passed over;
// `unreadable`, when given, gets one line for each ("DIR/trainer.json: why").
SKEIN_EXPORT std::string find_latest_checkpoint(const std::string& root,
                                                std::vector<std::string>* unreadable = nullptr);
// find_latest_checkpoint for a resume (skein train --resume, a restart, a
// session's resume): each checkpoint passed over as unreadable is a warning
// on the main rank, as a newer one may be among them.
SKEIN_EXPORT std::string checkpoint_to_resume(const std::string& root, bool main_rank);

// The model export, predict and init_from take by default: `root`/final, or
// the newest periodic checkpoint when that holds a later complete epoch (a resumed run
// that crashed after the last final was written); "" when there is neither.
SKEIN_EXPORT std::string find_model_checkpoint(const std::string& root);

// Why skein may not put a checkpoint at `dir` in place of what is there, or
// "" when it may: nothing there, an empty directory, or a checkpoint (a
// directory of checkpoint files only, trainer.json among them). Nothing
// else is ever replaced: skein did not write it.
SKEIN_EXPORT std::string why_not_replaceable(const std::string& dir);

// Throws ConfigError ("checkpoint DIR: 'DIR/model.pt' is not a regular file
// (a character device)") unless every checkpoint file in `dir` (the names
// why_not_replaceable knows, links followed) is a regular file: a FIFO would
// block its reader and /dev/zero never end. read_checked_checkpoint calls it
// before any file of the checkpoint is opened.
SKEIN_EXPORT void check_checkpoint_files(const std::string& dir);

// Where a session's save_checkpoint(name) writes, by the rules skein
// train's outputs obey: a relative name lands in RUN/checkpoints/; the run
// directory, those above it and the run's own files (checkpoints/ itself,
// config.json, ...) are refused; a path outside the run needs
// `allow_outside` (or SKEIN_ALLOW_OUTSIDE_RUN_DIR=1); anything but a
// checkpoint already there is refused (why_not_replaceable, checked on the
// main rank). Records the path among the run's outputs. Throws
// std::invalid_argument, one line naming `name`.
SKEIN_EXPORT std::string checkpoint_save_path(const RunInfo& run, const std::string& name, bool allow_outside);

// Where load_checkpoint(name) reads: a relative name in RUN/checkpoints/
// (as checkpoint_save_path puts it), an absolute path as it is.
SKEIN_EXPORT std::string checkpoint_load_path(const RunInfo& run, const std::string& name);

}  // namespace skein::core
