#include "skein/core/failure_report.hpp"

#include <chrono>
#include <cstdlib>

#include "skein/atomic_file.hpp"
#include "skein/core/exit_codes.hpp"
#include "skein/env_vars.hpp"
#include "skein/errors.hpp"
#include "skein/json.hpp"

namespace skein::core {

namespace {
bool g_reported = false;
}  // namespace

int exit_code_for(const std::exception& e) {
  return dynamic_cast<const ConfigError*>(&e) || dynamic_cast<const PluginError*>(&e) ? exit_code::kConfig
                                                                                         : exit_code::kFailure;
}

bool report_failure(const std::string& message, int exit_code) {
  if (g_reported) return true;
  const char* path = std::getenv(env::kErrorFile);
  if (!path || !*path) return false;
  const char* rank = std::getenv(env::kRank);
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  nlohmann::json j = {{"rank", rank ? rank : ""},
                      {"time_us", std::chrono::duration_cast<std::chrono::microseconds>(now).count()},
                      {"message", first_line(message)},
                      {"exit_code", exit_code}};
  try {
    write_file_atomic(path, j.dump());
    g_reported = true;
  } catch (const std::exception&) {
    // Best effort: the worker then prints the error itself.
  }
  return g_reported;
}

}  // namespace skein::core
