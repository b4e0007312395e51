#pragma once
// Where plugins write: every file a run writes lives inside its run directory
// and is recorded there (in .skein-outputs), so that `--overwrite` removes
// exactly what skein wrote and nothing else. A path outside the run directory
// (absolute, "..", or through a symlink) is refused unless the user started
// skein with --allow-outside-run-dir (environment SKEIN_ALLOW_OUTSIDE_RUN_DIR=1),
// and the run's own files (config.json, history.json, ...) are never a
// plugin's to write. No torch here: cheap to include.
#include <string>
#include <vector>

#include "skein/export.hpp"
#include "skein/run_info.hpp"

namespace skein {

class Options;

// The absolute path for option `key` of `options` (a file or directory name,
// relative to the run directory). Records it as an output of the run (rank 0
// only). Throws ConfigError naming the plugin and the option.
SKEIN_EXPORT std::string run_output_path(const Options& options, const std::string& key, const RunInfo& run);

// The same for a name the plugin chose itself; `what` names it in errors.
// A plugin that writes several files into a directory of its own records each
// of them this way, e.g. run_output_path(run, dir + "/" + file, ...).
SKEIN_EXPORT std::string run_output_path(const RunInfo& run, const std::string& name, const std::string& what);

// For option `key` naming a directory the plugin writes its files into (API
// 2.2): recorded as a container, which `--overwrite` removes only once empty,
// so that files a user put there stay. (run_output_path records the entry as
// a whole: a directory recorded that way goes with everything in it.)
SKEIN_EXPORT std::string run_output_dir(const Options& options, const std::string& key, const RunInfo& run);

// Whether `path` is (inside) an output this run recorded, in this process or
// in an earlier attempt on the same run directory (a restart, a resume).
SKEIN_EXPORT bool is_run_output(const RunInfo& run, const std::string& path);

// Whether the user allowed outputs outside the run directory.
SKEIN_EXPORT bool outside_run_dir_allowed();

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
