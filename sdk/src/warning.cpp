#include "skein/detail/warning_log.hpp"
#include "skein/errors.hpp"

#include <iostream>
#include <mutex>

namespace skein {
namespace {

std::mutex& warning_mutex() {
  static std::mutex m;
  return m;
}

WarningLog& warning_log() {
  static WarningLog log;
  return log;
}

}  // namespace

void warn(const std::string& message) {
  const std::string line = "skein: warning: " + message + "\n";
  std::lock_guard<std::mutex> lock(warning_mutex());
  std::cerr << line << std::flush;
  if (warning_log()) warning_log()(line);
}

void set_warning_log(WarningLog log) {
  std::lock_guard<std::mutex> lock(warning_mutex());
  warning_log() = std::move(log);
}

}  // namespace skein
