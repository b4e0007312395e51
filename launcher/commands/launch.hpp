#pragma once
// Starting this node's workers for `skein train` (one process each), restarts
// of the whole group included.
#include "launch_options.hpp"

namespace skein::launcher {

// Starts this node's workers and waits for them; returns the exit code.
int launch(const LaunchOptions& options);

}  // namespace skein::launcher
