#pragma once
// The host's side of skein::warn (skein/errors.hpp): where warnings go
// besides stderr (the run's log file). An empty function stops that. Set by
// the trainer for the duration of a run.
#include <functional>
#include <string>

#include "skein/detail/export.hpp"

namespace skein {
using WarningLog = std::function<void(const std::string& line)>;
SKEIN_EXPORT void set_warning_log(WarningLog log);
}  // namespace skein
