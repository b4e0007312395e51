#pragma once
// A checkpoint directory's files as one string, and back: live recovery
// (engine/live_recovery.hpp) hands its leader's checkpoint to the other
// members over the process group this way, not through a shared disk.
#include <string>

#include "skein/detail/export.hpp"

namespace skein::core {

// The regular files directly in `dir` (a checkpoint has no subdirectories).
SKEIN_EXPORT std::string pack_checkpoint_dir(const std::string& dir);
// Writes `bytes` (pack_checkpoint_dir's) as the files of the new directory `dir`.
SKEIN_EXPORT void unpack_checkpoint_dir(const std::string& bytes, const std::string& dir);

}  // namespace skein::core
