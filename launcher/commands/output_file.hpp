#pragma once
// The file a command (export, predict) writes with --out: never one of a run
// directory's own files, which resume and predict read back, nor a file it
// reads, nor "".
#include <string>

namespace skein::launcher {

// Throws ConfigError when `out` is "", or (through links) a run directory's
// config.json, history.json, a checkpoint's file, ... of any run directory
// above it; `flag` names the option in the message.
void check_output_file(const std::string& out, const std::string& flag);

// The file a command writes beside --out (export's FILE.json), checked
// before either is written, so that a failure leaves neither: as
// check_output_file, and a name that fits a directory entry, and nothing
// there but a regular file (a directory or a FIFO would stop the second
// write after the first).
void check_companion_file(const std::string& path, const std::string& flag);

// Throws ConfigError when `out` is the very file `input` (through links or
// another name): predict would replace its own inputs.
void check_not_the_input(const std::string& out, const std::string& input, const std::string& input_flag);

}  // namespace skein::launcher
