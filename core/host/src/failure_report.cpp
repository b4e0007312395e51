#include "skein/host/failure_report.hpp"

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>

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

// Whether the file at `path` may be replaced by an error record: it is
// missing, not a regular file (write_file_atomic writes a FIFO or device in
// place and refuses a directory), empty, or an error record already (an
// earlier failure's, torchrun's layout: {"message": ...}). Anything else (a
// run's config.json or history.json named by mistake) is kept.
bool holds_no_other_data(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return true;
  constexpr off_t kLargestRecord = 1 << 20;
  if (st.st_size > kLargestRecord) return false;
  std::ifstream in(path, std::ios::binary);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("message")) return false;
  for (const auto& [key, value] : j.items())
    if (key != "message" && key != "extraInfo") return false;
  return true;
}

// torchrun's error file (TORCHELASTIC_ERROR_FILE, one per worker), in the
// layout its end-of-run summary reads (torch/distributed/elastic/
// multiprocessing/errors): the summary prints py_callstack, and takes the
// root cause from the smallest timestamp (seconds). torchrun names a file of
// its own that does not exist yet; a file holding other data is never
// replaced (docs/clusters.md).
void report_to_torchrun(const std::string& message, std::int64_t time_us) {
  const char* path = std::getenv(env::kTorchElasticErrorFile);
  if (!path || !*path) return;
  if (!holds_no_other_data(path)) {
    warn(std::string(env::kTorchElasticErrorFile) + "=" + path +
         " names a file that holds other data; left as it is (the error is not written there)");
    return;
  }
  const std::string line = failure_line(message);
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

std::string failure_line(const std::string& message) {
  std::string line = first_line(message);
  // Gloo 2.x (transport/tcp/pair.cc): "<error>. This is typically caused by a
  // remote worker <...>. Check the logs of the remote worker before reporting
  // an error. GLHF! <emoji>", in the middle of a line when a plugin wraps it.
  const std::string advice = " This is typically caused by ", sign_off = "GLHF!";
  for (std::size_t from = line.find(advice); from != std::string::npos; from = line.find(advice, from)) {
    const std::size_t end = line.find(sign_off, from);
    if (end == std::string::npos) break;
    std::size_t to = end + sign_off.size();
    // The emoji after it (any non-ASCII bytes, and a space before them).
    std::size_t after = to;
    while (after < line.size() && line[after] == ' ') ++after;
    while (after < line.size() && static_cast<unsigned char>(line[after]) >= 0x80) ++after;
    if (after > to && static_cast<unsigned char>(line[after - 1]) >= 0x80) to = after;
    line.erase(from, to - from);
  }
  return line;
}

int exit_code_for(const std::exception& e) {
  if (const auto* stop = dynamic_cast<const Interrupted*>(&e)) return 128 + stop->signal();
  return dynamic_cast<const ConfigError*>(&e) || dynamic_cast<const PluginError*>(&e) ? exit_code::kConfig
                                                                                         : exit_code::kFailure;
}

namespace {
std::string live_id_file(const std::string& error_file) { return error_file + ".live_id"; }
}  // namespace

void report_live_id(int id) {
  const char* path = std::getenv(env::kErrorFile);
  if (path && *path) write_file_atomic(live_id_file(path), std::to_string(id) + "\n");
}

int reported_live_id(const std::string& error_file) {
  int id = -1;
  if (!error_file.empty()) std::ifstream(live_id_file(error_file)) >> id;
  return id;
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
                      {"message", failure_line(message)},
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
