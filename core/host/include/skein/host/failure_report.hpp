#pragma once
// How a worker started by `skein train` tells its launcher why it failed. The
// launcher reads every worker's report once all have stopped: the earliest
// one is the root cause (the failures of its peers come after it), and its
// exit code stands even when the launcher's SIGTERM ended that worker first.
#include <exception>
#include <string>

#include "skein/detail/export.hpp"

namespace skein::core {

// The exit code a failure ends skein with: 2 for bad configuration or a
// plugin that cannot be used, 128 + the signal for an Interrupted run
// (interrupt.hpp), 1 for anything else.
SKEIN_EXPORT int exit_code_for(const std::exception& e);

// The one line a failure is reported with: skein::first_line(message), less
// the advice Gloo appends to its transport errors ("This is typically caused
// by a remote worker crashing. Check the logs ... GLHF!"), which hides the
// error itself ("Connection closed by peer [10.0.0.2]:4242") behind a
// sentence that the launcher's own line (which rank failed first) answers.
SKEIN_EXPORT std::string failure_line(const std::string& message);

// Live recovery: a worker says its id in the run's membership beside its
// report file (<report>.live_id), so that its launcher, when the worker is
// killed, knows without reading the run's store (which a worker killed inside
// a write leaves torn) that the others go on, and whom to report lost.
SKEIN_EXPORT void report_live_id(int id);
// The id the worker whose report file is `error_file` said; -1: none (it
// trains without live recovery, or died before it said it).
SKEIN_EXPORT int reported_live_id(const std::string& error_file);

// Writes {"rank", "time_us", "message", "exit_code"} to $SKEIN_ERROR_FILE
// (env::kErrorFile, set by the launcher: one file per worker), and under
// torchrun the same message to $TORCHELASTIC_ERROR_FILE in torchrun's layout,
// once: later calls keep the first report, the one closest to the cause.
// Returns whether skein's launcher has a report (false outside a run it
// launched, or when the file cannot be written).
SKEIN_EXPORT bool report_failure(const std::string& message, int exit_code);
inline bool report_failure(const std::exception& e) { return report_failure(e.what(), exit_code_for(e)); }

}  // namespace skein::core
