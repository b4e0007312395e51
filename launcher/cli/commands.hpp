#pragma once
#include <string>
#include <vector>

#include "skein/detail/export.hpp"

namespace skein::launcher {

// Each returns the process exit code; errors propagate as exceptions.
// In the `skein` executable (no libtorch):
int cmd_plugins(const std::vector<std::string>& args);
// In libskein_commands, which the executable loads for these commands only:
int cmd_train(const std::vector<std::string>& args);
int cmd_export(const std::vector<std::string>& args);
int cmd_predict(const std::vector<std::string>& args);

}  // namespace skein::launcher

// libskein_commands' one entry point: runs `skein COMMAND ARGS...` (train,
// export or predict) and returns its exit code, every error already printed.
#define SKEIN_COMMANDS_ENTRY "skein_run_command"
extern "C" SKEIN_EXPORT int skein_run_command(const char* command, int argc, const char* const* argv);

// libskein_commands' report of the libtorch it runs with (one line into
// `out`, cut at `size`); returns the report's length. For `skein --version`.
#define SKEIN_RUNTIME_REPORT "skein_runtime_report"
extern "C" SKEIN_EXPORT int skein_runtime_report(char* out, int size);
