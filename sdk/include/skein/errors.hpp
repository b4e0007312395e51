#pragma once
// Errors and warnings: how a plugin tells the user what is wrong.
#include <stdexcept>
#include <string>

#include "skein/detail/export.hpp"

namespace skein {

// `text` with control characters written as escapes (\n, \t, \x1b, ...): a
// name a user chose (a file, a key) may hold a line break, and an error
// message is one line.
SKEIN_EXPORT std::string printable(const std::string& text);

// Bad configuration or usage: the launcher exits with code 2. The message is
// made printable(): it names what the user wrote, and stays one line.
class SKEIN_EXPORT ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message);
  explicit ConfigError(const char* message) : ConfigError(std::string(message)) {}
  ~ConfigError() override;
};

// API 2.5: a ConfigError about one option of a plugin, its name carried as
// data: Options' getters and fail() throw it, and the host, which knows where
// the plugin sits in the config ("callbacks.2"), names the config file or the
// --set flag that gave the value without reading the message.
class SKEIN_EXPORT OptionError : public ConfigError {
 public:
  OptionError(std::string option, const std::string& message);
  ~OptionError() override;
  const std::string& option() const { return option_; }

 private:
  std::string option_;
};

// A plugin that cannot be loaded or used (bad file, version, duplicate).
class SKEIN_EXPORT PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  ~PluginError() override;
};

// An error message as one line for users. libtorch's carry a C++ backtrace
// after the first line; its compiler's start with an empty line; an error
// raised inside TorchScript code names its cause after the script's
// traceback; a failed internal assertion carries the source file and line and
// a request to report a bug to PyTorch, dropped here (its condition and
// message stay).
// Inline: plugins built against API 2.x use it without a symbol of the host.
inline std::string first_line(const std::string& message) {
  auto line_at = [&](std::size_t at) { return message.substr(at, message.find('\n', at) - at); };
  auto starts = [](const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; };
  std::string line = line_at(0);
  // Interpreter: a header line, indented traceback lines, then "RuntimeError: <cause>".
  const bool in_script = starts(line, "The following operation failed in the TorchScript interpreter");
  auto blank = [](const std::string& s) { return s.find_first_not_of(" \t") == std::string::npos; };
  for (std::size_t at = message.find('\n'); at != std::string::npos; at = message.find('\n', at + 1)) {
    if (!in_script && !blank(line)) break;
    const std::string next = line_at(at + 1);
    if (blank(next) || (in_script && (next[0] == ' ' || starts(next, "Traceback of TorchScript")))) continue;
    line = in_script ? "in TorchScript code: " + next : next;
    break;
  }
  // TORCH_INTERNAL_ASSERT: 'COND INTERNAL ASSERT FAILED at "FILE":LINE, please report a bug to PyTorch. MESSAGE'.
  const std::string assert_at = " INTERNAL ASSERT FAILED at ", report = ", please report a bug to PyTorch.";
  const std::size_t from = line.find(assert_at);
  const std::size_t to = from == std::string::npos ? from : line.find(report, from);
  if (to != std::string::npos) {
    const std::size_t at = line.find_first_not_of(' ', to + report.size());
    const std::string rest = at == std::string::npos ? "" : line.substr(at);
    line = line.substr(0, from) + " failed (a libtorch internal check)" +
           (rest.empty() || rest[0] == ')' ? rest : ": " + rest);
  }
  return line;
}

// The one way to warn: "skein: warning: <message>" on stderr and, during a
// run, the same line in the run's log file (train.log), so a warning is seen
// live and is still there afterwards. Plugins and the host both use it.
SKEIN_EXPORT void warn(const std::string& message);

}  // namespace skein
