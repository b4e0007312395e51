#pragma once
// A run directory's life on rank 0: locked for the run's lifetime, checked
// before anything is written, cleared on --overwrite only of what skein wrote
// (the entries listed in .skein-outputs), and removed again after a failed
// start. No torch here.
#include <string>
#include <vector>

#include "skein/export.hpp"

namespace skein::core {

enum class RunDirState {
  fresh,         // missing, empty, or only what skein wrote for a run that never finished an epoch
  holds_run,     // a run written by skein, with at least one epoch (history.json)
  foreign,       // files skein did not write: never touched
};

// What `dir` holds now (reads only).
SKEIN_EXPORT RunDirState run_dir_state(const std::string& dir);

// Throws ConfigError unless a new run may start in `dir`: fresh, or holding a
// run and `overwrite` is set. Reads only: the launcher checks before starting workers.
SKEIN_EXPORT void check_run_dir_usable(const std::string& dir, bool overwrite);

class SKEIN_EXPORT RunDirectory {
 public:
  // Creates `dir` when missing and takes its lock (.skein.lock) for this
  // object's lifetime; a second process gets a ConfigError naming the holder.
  explicit RunDirectory(std::string dir);
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  const std::string& path() const { return dir_; }

  // After every plugin was created (so the new config is known to be good):
  // removes the previous run's recorded outputs, except those this process
  // recorded again, then records skein's own files and starts the new list.
  void start_new_run();
  // For --resume and restarts: keeps everything, appends to the list.
  void continue_run();
  // After a start that failed before training: removes what this process
  // wrote, and the directory itself when this process created it.
  void discard_failed_start();

 private:
  void remove_listed(const std::vector<std::string>& entries, const std::vector<std::string>& keep);
  std::string dir_;
  bool created_ = false;   // by this process
  bool started_ = false;   // start_new_run() ran
  int lock_fd_ = -1;
  std::vector<std::string> previous_;  // the outputs list as found
};

}  // namespace skein::core
