#pragma once
// skein's exit codes, the one table of them (README, "Command line"). A
// worker's code travels to its launcher in its failure report, so the run
// ends with the code of its root cause.
namespace skein::exit_code {

constexpr int kSuccess = 0;
constexpr int kFailure = 1;  // anything else: bad data, a failure while training, a worker that died
constexpr int kConfig = 2;   // usage, config or plugin error (bad flags, ConfigError, PluginError)

}  // namespace skein::exit_code
