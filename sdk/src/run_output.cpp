#include "skein/detail/run_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <stdexcept>

#include "skein/io/atomic_file.hpp"
#include "skein/detail/sdk_env_vars.hpp"
#include "skein/errors.hpp"
#include "skein/options.hpp"

namespace fs = std::filesystem;

namespace skein {

namespace {

struct Recorded {
  std::mutex mutex;
  std::vector<std::string> entries;  // this process's, in order
  std::string list_file;             // empty until the host adopts the run directory
};

Recorded& recorded() {
  static auto* r = new Recorded();  // never destroyed: plugins may record during exit
  return *r;
}

fs::path run_root(const RunInfo& run) {
  return fs::absolute(run.run_dir.empty() ? fs::path(".") : fs::path(run.run_dir)).lexically_normal();
}

fs::path without_trailing_slash(fs::path p) {
  if (!p.empty() && !p.has_filename()) p = p.parent_path();
  return p;
}

// Component-wise: "runs/a/b" is within "runs/a", "runs/ab" is not.
bool within(const fs::path& p, const fs::path& root) {
  auto r = root.begin();
  auto q = p.begin();
  for (; r != root.end(); ++r, ++q) {
    if (r->empty()) continue;  // a trailing separator
    if (q == p.end() || *q != *r) return false;
  }
  return true;
}

void append_text(const std::string& file, const std::string& text) {
  const int fd = open_no_follow(file, O_WRONLY | O_APPEND | O_CREAT);
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    throw std::runtime_error("cannot write " + file + ": " + std::strerror(n < 0 ? err : ENOSPC));
}

void append_line(const std::string& file, const std::string& line) { append_text(file, line + "\n"); }

// Records `rel` (relative to the run directory) with each directory above it
// as a container ("a/", "a/b/"): skein may have created them, and removes them
// again only when they are empty.
void record_with_parents(const RunInfo& run, const fs::path& rel, bool container) {
  fs::path prefix;
  for (auto it = rel.begin(); it != rel.end(); ++it) {
    prefix /= *it;
    const bool last = std::next(it) == rel.end();
    if (!last || container) run_files::record(run, prefix.generic_string() + "/");
    else run_files::record(run, prefix.generic_string());
  }
}
std::string resolve(const RunInfo& run, const std::string& name, bool directory,
                    const std::function<void(const std::string&)>& fail) {
  if (name.empty()) fail("is empty; name a file inside the run directory");
  // The list of outputs holds a name a line.
  if (name.find_first_of("\n\r") != std::string::npos) fail("contains a line break; choose another name");
  const fs::path root = without_trailing_slash(run_root(run));
  const fs::path p = without_trailing_slash((fs::path(name).is_absolute() ? fs::path(name) : root / name).lexically_normal());
  bool inside = p != root && within(p, root);
  if (inside) {
    // A symlink inside the run directory may still lead out of it.
    std::error_code ec;
    const fs::path real_root = fs::weakly_canonical(root, ec);
    const fs::path real = fs::weakly_canonical(p, ec);
    inside = !ec && real != real_root && within(real, real_root);
  }
  if (!inside) {
    if (!outside_run_dir_allowed())
      fail("names '" + name + "', which is outside the run directory " + root.string() +
           "; skein writes only inside it unless started with --allow-outside-run-dir");
    run_files::record(run, p.string());
    return p.string();
  }
  const fs::path rel = p.lexically_relative(root);
  const std::string first = rel.begin()->string();
  for (const auto& own : run_files::reserved())
    if (first == own) fail("names '" + name + "', which is the run's own '" + own + "'; choose another name");
  record_with_parents(run, rel, directory);
  return p.string();
}

}  // namespace

bool outside_run_dir_allowed() {
  const char* v = std::getenv(env::kAllowOutsideRunDir);
  return v && std::string(v) == "1";
}

std::string run_output_path(const Options& options, const std::string& key, const RunInfo& run) {
  return resolve(run, options.get_string(key), false, [&](const std::string& why) { options.fail(key, why); });
}

std::string run_output_path(const RunInfo& run, const std::string& name, const std::string& what) {
  return resolve(run, name, false, [&](const std::string& why) -> void { throw ConfigError(what + " " + why); });
}

std::string run_output_dir(const Options& options, const std::string& key, const RunInfo& run) {
  return resolve(run, options.get_string(key), true, [&](const std::string& why) { options.fail(key, why); });
}

bool is_run_output(const RunInfo& run, const std::string& path) {
  const fs::path root = without_trailing_slash(run_root(run));
  const fs::path p = without_trailing_slash((fs::path(path).is_absolute() ? fs::path(path) : root / path).lexically_normal());
  std::vector<std::string> entries = run_files::recorded_in_process();
  for (auto& e : run_files::read_list(run.run_dir.empty() ? "." : run.run_dir)) entries.push_back(e);
  for (const auto& e : entries) {
    const fs::path abs = fs::path(e).is_absolute() ? fs::path(e) : root / e;
    if (within(p, without_trailing_slash(abs.lexically_normal()))) return true;
  }
  return false;
}

namespace run_files {

const std::vector<std::string>& reserved() {
  static const std::vector<std::string> names = {kConfig,  kConfigHistory, kHistory,    kResults,
                                                 kRunInfo, kLog,           kCheckpoints, kOutputList,
                                                 kLock,    kPreviousRun,   kDiscarded};
  return names;
}

void record(const RunInfo& run, const std::string& entry) {
  if (!run.is_main()) return;
  auto& r = recorded();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (std::find(r.entries.begin(), r.entries.end(), entry) != r.entries.end()) return;
  r.entries.push_back(entry);
  if (!r.list_file.empty()) append_line(r.list_file, entry);
}

void adopt(const std::string& run_dir) {
  const std::string file = run_dir + "/" + kOutputList;
  const std::vector<std::string> listed = read_list(run_dir);
  auto& r = recorded();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.list_file = file;
  if (listed.empty() && !std::filesystem::exists(file)) append_line(file, kListHeader);
  for (const auto& e : r.entries)
    if (std::find(listed.begin(), listed.end(), e) == listed.end()) append_line(file, e);
}

std::vector<std::string> recorded_in_process() {
  auto& r = recorded();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.entries;
}

std::vector<std::string> read_list(const std::string& run_dir) {
  std::vector<std::string> out;
  std::ifstream in(run_dir + "/" + kOutputList);
  bool first = true;
  for (std::string line; std::getline(in, line); first = false) {
    if (first && line == kListHeader) continue;
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

}  // namespace run_files

}  // namespace skein
