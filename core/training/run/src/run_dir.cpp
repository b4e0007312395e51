#include "skein/training/run/run_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <boost/filesystem.hpp>

#include "skein/io/atomic_file.hpp"
#include "skein/training/checkpoint/checkpoint_dir.hpp"
#include "skein/errors.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/run.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool is_bookkeeping(const std::string& name) {
  return name == run_files::kLock || name == run_files::kOutputList || name == run_files::kPreviousRun ||
         name == run_files::kDiscarded;
}

bool is_container(const std::string& entry) { return !entry.empty() && entry.back() == '/'; }

std::string without_slash(std::string entry) {
  while (is_container(entry)) entry.pop_back();
  return entry;
}

// A listed entry skein may remove or move: a relative path inside the
// directory, with no "." or ".." component (links are dealt with by no_follow).
bool removable(const std::string& entry) {
  const fs::path p(without_slash(entry));
  if (p.empty() || p.is_absolute() || is_bookkeeping(p.begin()->string())) return false;
  for (const auto& part : p)
    if (part == ".." || part == ".") return false;
  return true;
}

std::string first_component(const std::string& entry) { return fs::path(without_slash(entry)).begin()->string(); }

// Removes the entries, deepest first (a file before the container holding
// it): files and whole entries go, containers only once empty.
void remove_entries(const no_follow::Dir& root, std::vector<std::string> entries) {
  std::vector<std::pair<std::string, bool>> paths;  // path, whole
  for (const auto& e : entries)
    if (removable(e)) paths.emplace_back(without_slash(e), !is_container(e));
  std::sort(paths.begin(), paths.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [path, whole] : paths) no_follow::remove(root, path, whole);
}

// Skein's own files of a run, recorded so that --overwrite removes them too.
void record_core_files() {
  const RunInfo main_rank;  // rank 0
  for (const auto& name : run_files::reserved())
    if (!is_bookkeeping(name)) run_files::record(main_rank, name == "checkpoints" ? name + "/" : name);
}

bool exists(const std::string& path) {
  boost::system::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

int lock_run_dir(const std::string& dir) {
  const std::string lock = dir + "/" + run_files::kLock;
  int fd = -1;
  try {
    fd = open_no_follow(lock, O_RDWR | O_CREAT);
  } catch (const std::exception& e) {
    throw ConfigError("run directory '" + dir + "': " + e.what());
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char holder[32] = {};
    const ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    std::string pid = n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : "";
    pid.erase(std::remove(pid.begin(), pid.end(), '\n'), pid.end());
    ::close(fd);
    throw ConfigError("run directory '" + dir + "' is in use by another skein process" +
                      (pid.empty() ? "" : " (pid " + pid + ")") +
                      "; wait for it to finish, or choose another --run-dir");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The pid only improves the message of a second process.
  }
  return fd;
}

}  // namespace

RunDirState run_dir_state(const std::string& dir) {
  boost::system::error_code ec;
  if (!fs::exists(dir, ec)) return RunDirState::fresh;
  if (!fs::is_directory(dir, ec)) return RunDirState::foreign;
  const fs::path root(dir);
  // An --overwrite that never completed an epoch: the previous run comes back.
  if (fs::is_directory(fs::symlink_status(root / run_files::kPreviousRun, ec))) return RunDirState::holds_run;
  const auto listed = run_files::read_list(dir);
  const bool has_list = exists((root / run_files::kOutputList).string());
  // A run whose first epoch never ended (its start failed on another rank, or
  // it was killed) left nothing worth keeping: the next run may clean it.
  if (has_list && exists((root / run_files::kConfig).string()) && exists((root / run_files::kHistory).string()))
    return RunDirState::holds_run;
  std::vector<std::string> firsts;
  for (const auto& e : listed)
    if (removable(e)) firsts.push_back(first_component(e));
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_bookkeeping(name) && !contains(firsts, name)) return RunDirState::foreign;
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

void recover_run_dir(const std::string& dir) {
  boost::system::error_code ec;
  if (fs::is_directory(fs::symlink_status(fs::path(dir) / run_files::kPreviousRun, ec))) RunDirectory held(dir);
}

RunDirectory::RunDirectory(std::string dir) : dir_(std::move(dir)) {
  boost::system::error_code ec;
  created_ = !fs::exists(dir_, ec);
  fs::create_directories(dir_, ec);
  if (ec) throw ConfigError("cannot create run directory '" + dir_ + "': " + ec.message());
  lock_fd_ = lock_run_dir(dir_);
  root_ = no_follow::open_dir(dir_);
  no_follow::remove(root_, run_files::kDiscarded, true);  // a commit interrupted while deleting
  if (no_follow::open_subdir(root_, run_files::kPreviousRun)) {
    if (const std::string kept = new_run_checkpoint(); !kept.empty()) {
      warn("run directory '" + dir_ + "': a new run there stopped in its first epoch after writing checkpoint " +
           kept + "; it is the run now, and the run it replaced is removed");
      previous_aside_ = true;
      discard_previous_run();
    } else {
      warn("run directory '" + dir_ + "': a new run there stopped before its first epoch ended; " +
           "the run it was to replace is brought back");
      restore_previous_run();
    }
  }
}

RunDirectory::~RunDirectory() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

void RunDirectory::set_aside_previous_run() {
  if (previous_aside_ || !exists(dir_ + "/" + run_files::kOutputList)) return;
  const auto listed = run_files::read_list(dir_);
  const no_follow::Dir aside = no_follow::open_subdir(root_, run_files::kPreviousRun, true);
  if (!aside) throw std::runtime_error("cannot create " + dir_ + "/" + run_files::kPreviousRun);
  previous_aside_ = true;
  // The list first: from then on, .skein-previous says where the run is.
  no_follow::move(root_, aside, run_files::kOutputList);
  for (const auto& e : listed)
    if (removable(e) && !is_container(e)) no_follow::move(root_, aside, e);
}

void RunDirectory::restore_previous_run() {
  const no_follow::Dir aside = no_follow::open_subdir(root_, run_files::kPreviousRun);
  if (!aside) return;
  // What the new run wrote goes, then the previous run's files come back.
  if (exists(dir_ + "/" + run_files::kOutputList)) {
    remove_entries(root_, run_files::read_list(dir_));
    no_follow::remove(root_, run_files::kOutputList, false);
  }
  for (const auto& e : run_files::read_list(dir_ + "/" + run_files::kPreviousRun))
    if (removable(e) && !is_container(e)) no_follow::move(aside, root_, e);
  no_follow::move(aside, root_, run_files::kOutputList);
  no_follow::remove(root_, run_files::kPreviousRun, true);
  previous_aside_ = false;
}

void RunDirectory::start_new_run() {
  set_aside_previous_run();  // claim did it already, before any plugin wrote
  run_files::adopt(dir_);
  record_core_files();
}

void RunDirectory::continue_run() {
  run_files::adopt(dir_);
  record_core_files();
  committed_ = true;
}

std::string RunDirectory::new_run_checkpoint() const {
  const std::string latest = find_latest_checkpoint(run_files::path(dir_, run_files::kCheckpoints));
  if (latest.empty()) return "";
  // Listed by the new run: not a user's copy of some checkpoint.
  const std::string entry = std::string(run_files::kCheckpoints) + "/" + fs::path(latest).filename().string();
  return contains(run_files::read_list(dir_), entry) ? latest : "";
}

void RunDirectory::commit_new_run() {
  if (committed_) return;
  committed_ = true;
  if (previous_aside_) discard_previous_run();
}

void RunDirectory::discard_previous_run() {
  // The previous run's folders stayed (they may hold a user's files): those
  // now empty go too.
  std::vector<std::string> containers;
  for (const auto& e : run_files::read_list(dir_ + "/" + run_files::kPreviousRun))
    if (is_container(e)) containers.push_back(e);
  remove_entries(root_, containers);
  // Renamed first, so that an interrupted deletion is never taken for a run to restore.
  if (::renameat(root_.fd(), run_files::kPreviousRun, root_.fd(), run_files::kDiscarded) != 0)
    throw std::runtime_error("cannot remove the previous run in " + dir_ + ": " + std::strerror(errno));
  previous_aside_ = false;
  no_follow::remove(root_, run_files::kDiscarded, true);
}

void RunDirectory::discard_failed_start() {
  // Whatever the previous run had is aside: every entry recorded here is ours.
  std::vector<std::string> ours = run_files::recorded_in_process();
  for (const auto& e : run_files::read_list(dir_)) ours.push_back(e);
  remove_entries(root_, ours);
  no_follow::remove(root_, run_files::kOutputList, false);
  if (previous_aside_) {
    restore_previous_run();
    return;
  }
  no_follow::remove(root_, run_files::kLock, false);
  boost::system::error_code ec;
  if (created_) fs::remove(dir_, ec);  // only when empty
}

}  // namespace skein::core
