#include "skein/core/run_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <boost/filesystem.hpp>

#include "skein/errors.hpp"
#include "skein/run_output.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool is_bookkeeping(const std::string& name) {
  return name == run_files::kLock || name == run_files::kOutputList;
}

// A listed entry skein may remove: a plain relative name inside the directory.
bool removable(const std::string& entry) {
  const fs::path p(entry);
  if (entry.empty() || p.is_absolute() || is_bookkeeping(entry)) return false;
  for (const auto& part : p)
    if (part == ".." || part == ".") return false;
  return true;
}

// Skein's own files of a run, recorded so that --overwrite removes them too.
void record_core_files() {
  const RunInfo main_rank;  // rank 0
  for (const auto& name : run_files::reserved())
    if (!is_bookkeeping(name)) run_files::record(main_rank, name);
}

}  // namespace

RunDirState run_dir_state(const std::string& dir) {
  boost::system::error_code ec;
  if (!fs::exists(dir, ec)) return RunDirState::fresh;
  if (!fs::is_directory(dir, ec)) return RunDirState::foreign;
  const auto listed = run_files::read_list(dir);
  const bool has_list = fs::exists(fs::path(dir) / run_files::kOutputList, ec);
  // A run whose first epoch never ended (its start failed on another rank, or
  // it was killed) left nothing worth keeping: the next run may clean it.
  if (has_list && fs::exists(fs::path(dir) / "config.json", ec) && fs::exists(fs::path(dir) / "history.json", ec))
    return RunDirState::holds_run;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_bookkeeping(name) && !contains(listed, name)) return RunDirState::foreign;
  }
  return ec ? RunDirState::foreign : RunDirState::fresh;
}

void check_run_dir_usable(const std::string& dir, bool overwrite) {
  switch (run_dir_state(dir)) {
    case RunDirState::fresh:
      return;
    case RunDirState::holds_run:
      if (overwrite) return;
      throw ConfigError("run directory '" + dir + "' already holds a run (config.json); choose another " +
                        "--run-dir, or pass --overwrite to replace it");
    case RunDirState::foreign:
      throw ConfigError("run directory '" + dir + "' is not empty and holds no run written by skein; " +
                        "skein starts a run only in a new or empty directory (and never deletes files it did not write)");
  }
}

RunDirectory::RunDirectory(std::string dir) : dir_(std::move(dir)) {
  boost::system::error_code ec;
  created_ = !fs::exists(dir_, ec);
  fs::create_directories(dir_, ec);
  if (ec) throw ConfigError("cannot create run directory '" + dir_ + "': " + ec.message());
  const std::string lock = dir_ + "/" + run_files::kLock;
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) throw ConfigError("cannot write in run directory '" + dir_ + "': " + std::strerror(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    std::string holder;
    std::ifstream(lock) >> holder;
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw ConfigError("run directory '" + dir_ + "' is in use by another skein process" +
                      (holder.empty() ? "" : " (pid " + holder + ")") +
                      "; wait for it to finish, or choose another --run-dir");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, pid.data(), pid.size(), 0) < 0) {
    // The pid only improves the message of a second process.
  }
  previous_ = run_files::read_list(dir_);
}

RunDirectory::~RunDirectory() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

void RunDirectory::remove_listed(const std::vector<std::string>& entries, const std::vector<std::string>& keep) {
  for (const auto& entry : entries) {
    if (!removable(entry) || contains(keep, entry)) continue;
    boost::system::error_code ec;
    fs::remove_all(fs::path(dir_) / entry, ec);  // a symlink is removed, not followed
    if (ec) throw std::runtime_error("cannot remove " + dir_ + "/" + entry + ": " + ec.message());
  }
}

void RunDirectory::start_new_run() {
  remove_listed(previous_, run_files::recorded_in_process());
  boost::system::error_code ec;
  fs::remove(fs::path(dir_) / run_files::kOutputList, ec);
  run_files::adopt(dir_);
  record_core_files();
  started_ = true;
}

void RunDirectory::continue_run() {
  run_files::adopt(dir_);
  record_core_files();
}

void RunDirectory::discard_failed_start() {
  // Before start_new_run the previous run is still there: only what this
  // process added goes.
  std::vector<std::string> ours;
  for (const auto& e : run_files::recorded_in_process())
    if (started_ || !contains(previous_, e)) ours.push_back(e);
  remove_listed(ours, {});
  boost::system::error_code ec;
  if (started_ || previous_.empty()) fs::remove(fs::path(dir_) / run_files::kOutputList, ec);
  if (!previous_.empty() && !started_) return;
  fs::remove(fs::path(dir_) / run_files::kLock, ec);
  if (created_) fs::remove(dir_, ec);  // only when empty
}

}  // namespace skein::core
