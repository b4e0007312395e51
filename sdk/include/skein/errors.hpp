#pragma once
#include <stdexcept>
#include <string>

#include "skein/export.hpp"

namespace skein {

// Bad configuration or usage: the launcher exits with code 2.
class SKEIN_EXPORT ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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
