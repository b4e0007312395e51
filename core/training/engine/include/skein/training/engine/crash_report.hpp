#pragma once
// A fatal signal (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL) inside plugin code
// would end the process without a word. The trainer marks which plugin and
// hook runs (two pointer stores, so cheap enough for every batch); the
// handler writes one line naming them to stderr and to train.log with
// async-signal-safe calls only, then lets the signal end the process as it
// would have. Checkpoints are written atomically, so the newest complete one
// stays resumable (the line says so only where there is one).
#include <string>

#include "skein/detail/export.hpp"
#include "skein/host/plugin_scope.hpp"

namespace skein::core {

// Installs the handler for this process; `rank` goes into the line.
SKEIN_EXPORT void install_crash_handler(int rank);
// Also append the line to this file (the run's train.log), from now on.
SKEIN_EXPORT void set_crash_log(const std::string& path);
// The run's checkpoints directory: the line says that --resume continues
// from it only when it holds a complete checkpoint when the signal comes.
SKEIN_EXPORT void set_crash_checkpoints(const std::string& dir);

// PluginScope marks which plugin and hook run (skein/host/plugin_scope.hpp:
// the registry marks loading and creating a plugin too).

}  // namespace skein::core
