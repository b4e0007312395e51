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
SKEIN_EXPORT std::string run_output_path(const RunInfo& run, const std::string& name, const std::string& what);

// Whether `path` is (inside) an output this run recorded, in this process or
// in an earlier attempt on the same run directory (a restart, a resume).
SKEIN_EXPORT bool is_run_output(const RunInfo& run, const std::string& path);

// Whether the user allowed outputs outside the run directory.
SKEIN_EXPORT bool outside_run_dir_allowed();

namespace run_files {
// The run's own entries, written by skein's core only.
inline constexpr const char* kOutputList = ".skein-outputs";
inline constexpr const char* kLock = ".skein.lock";
SKEIN_EXPORT const std::vector<std::string>& reserved();

// For skein's host. Outputs recorded before the run directory is adopted
// (while the config is still being validated) wait in memory; adopt() writes
// them to <run_dir>/.skein-outputs and appends every later one directly.
SKEIN_EXPORT void adopt(const std::string& run_dir);
SKEIN_EXPORT std::vector<std::string> recorded_in_process();
// Records an entry (relative to the run directory, or absolute) on rank 0.
SKEIN_EXPORT void record(const RunInfo& run, const std::string& entry);
// The entries listed in <run_dir>/.skein-outputs (none when it is missing).
SKEIN_EXPORT std::vector<std::string> read_list(const std::string& run_dir);
}  // namespace run_files

}  // namespace skein
