#include "skein/host/failure_report.hpp"

#include <chrono>
#include <cstdint>
#include <cstdlib>

#include "skein/io/atomic_file.hpp"
#include "skein/host/exit_codes.hpp"
#include "skein/host/interrupt.hpp"
#include "skein/host/env_vars.hpp"
#include "skein/errors.hpp"
#include "skein/detail/json.hpp"

namespace skein::core {

namespace {
bool g_reported = false;     // the first failure was handled
bool g_launcher_has = false; // ... and skein's launcher has its report

std::int64_t now_us() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::microseconds>(now).count();
}

// torchrun's error file (TORCHELASTIC_ERROR_FILE, one per worker), in the
// layout its end-of-run summary reads (torch/distributed/elastic/
// multiprocessing/errors): the summary prints py_callstack, and takes the
// root cause from the smallest timestamp (seconds).
void report_to_torchrun(const std::string& message, std::int64_t time_us) {
  const char* path = std::getenv(env::kTorchElasticErrorFile);
  if (!path || !*path) return;
  const std::string line = first_line(message);
  nlohmann::json j = {{"message",
                       {{"message", "skein: error: " + line},
                        {"extraInfo", {{"py_callstack", "skein: error: " + line},
                                       {"timestamp", std::to_string(time_us / 1000000)}}}}}};
  try {
    write_file_atomic(path, j.dump());
  } catch (const std::exception&) {
    // Best effort: torchrun then shows its own "<N/A>".
  }
}
}  // namespace

int exit_code_for(const std::exception& e) {
  if (const auto* stop = dynamic_cast<const Interrupted*>(&e)) return 128 + stop->signal();
  return dynamic_cast<const ConfigError*>(&e) || dynamic_cast<const PluginError*>(&e) ? exit_code::kConfig
                                                                                         : exit_code::kFailure;
}

bool report_failure(const std::string& message, int exit_code) {
  if (g_reported) return g_launcher_has;
  g_reported = true;
  const std::int64_t time_us = now_us();
  report_to_torchrun(message, time_us);
  const char* path = std::getenv(env::kErrorFile);
  if (!path || !*path) return false;
  const char* rank = std::getenv(env::kRank);
  nlohmann::json j = {{"rank", rank ? rank : ""},
                      {"time_us", time_us},
                      {"message", first_line(message)},
                      {"exit_code", exit_code}};
  try {
    write_file_atomic(path, j.dump());
    g_launcher_has = true;
  } catch (const std::exception&) {
    // Best effort: the worker then prints the error itself.
  }
  return g_launcher_has;
}

}  // namespace skein::core
