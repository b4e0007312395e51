#pragma once
// The one way to warn: "skein: warning: <message>" on stderr and, during a
// run, the same line in the run's log file (train.log), so a warning is seen
// live and is still there afterwards. Plugins and the host both use it.
#include <functional>
#include <string>

#include "skein/export.hpp"

namespace skein {

SKEIN_EXPORT void warn(const std::string& message);

// Host side: where warnings go besides stderr (the run's log file). An empty
// function stops that. Set by the trainer for the duration of a run.
using WarningLog = std::function<void(const std::string& line)>;
SKEIN_EXPORT void set_warning_log(WarningLog log);

}  // namespace skein
