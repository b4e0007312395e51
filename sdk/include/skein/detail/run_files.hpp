#pragma once
// The run directory's layout (what each entry holds and who writes it) and
// the host's half of output recording (skein/run.hpp has the plugins' half).
// Host-facing: plugins do not need this header.
#include <string>
#include <vector>

#include "skein/detail/export.hpp"
#include "skein/run.hpp"

namespace skein {

namespace run_files {
// The run directory's own entries, written by skein's core only (a plugin's
// outputs are refused these names). Their one home: every part of skein
// names them from here.
//   config.json           the resolved config the run started with (launcher)
//   config_history.jsonl  one line per start or resume, with its config
//   history.json          the history, rewritten after every epoch (rank 0)
//   results.json          epochs, stop reason, test results (rank 0, at the end)
//   run.json              the processes of the run and their agreement (launcher)
//   train.log             the run's log lines (rank 0)
//   checkpoints/          epoch_*, step_*, best, final (trainer_checkpoint.cpp)
inline constexpr const char* kConfig = "config.json";
inline constexpr const char* kConfigHistory = "config_history.jsonl";
inline constexpr const char* kHistory = "history.json";
inline constexpr const char* kResults = "results.json";
inline constexpr const char* kRunInfo = "run.json";
inline constexpr const char* kLog = "train.log";
inline constexpr const char* kCheckpoints = "checkpoints";
inline constexpr const char* kOutputList = ".skein-outputs";
inline constexpr const char* kLock = ".skein.lock";
// Where --overwrite keeps the previous run's outputs until the new run has
// completed an epoch (restored when it fails first), and where they go to be
// deleted after.
inline constexpr const char* kPreviousRun = ".skein-previous";
inline constexpr const char* kDiscarded = ".skein-discarded";
// The first line of a list in which a directory skein only holds files in
// ends with "/" (a container); a name without it is skein's whole.
inline constexpr const char* kListHeader = "# skein-outputs 2";
SKEIN_EXPORT const std::vector<std::string>& reserved();
// run_dir/entry.
inline std::string path(const std::string& run_dir, const char* entry) { return run_dir + "/" + entry; }

// For skein's host. Outputs recorded before the run directory is adopted
// (while the config is still being validated) wait in memory; adopt() writes
// them to <run_dir>/.skein-outputs and appends every later one directly.
SKEIN_EXPORT void adopt(const std::string& run_dir);
SKEIN_EXPORT std::vector<std::string> recorded_in_process();
// Records an entry (relative to the run directory, or absolute) on rank 0;
// a container ends with "/".
SKEIN_EXPORT void record(const RunInfo& run, const std::string& entry);
// The entries listed in <run_dir>/.skein-outputs (none when it is missing),
// without the header.
SKEIN_EXPORT std::vector<std::string> read_list(const std::string& run_dir);
}  // namespace run_files

}  // namespace skein
