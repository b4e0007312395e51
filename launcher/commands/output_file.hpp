#pragma once
// The file a command (export, predict) writes with --out: never one of a run
// directory's own files, which resume and predict read back.
#include <string>

namespace skein::launcher {

// Throws ConfigError when `out` (through links) is a run directory's
// config.json, history.json, a checkpoint's file, ... of any run directory
// above it; `flag` names the option in the message.
void check_output_file(const std::string& out, const std::string& flag);

}  // namespace skein::launcher
