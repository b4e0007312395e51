#pragma once
#include <stdexcept>
#include <string>

#include "skein/export.hpp"

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

// A plugin that cannot be loaded or used (bad file, version, duplicate).
class SKEIN_EXPORT PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  ~PluginError() override;
};

// The first line of an error message (libtorch's carry a backtrace after it).
inline std::string first_line(const std::string& message) {
  return message.substr(0, message.find('\n'));
}

}  // namespace skein
