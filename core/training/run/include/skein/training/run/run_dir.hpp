#pragma once
// A run directory's life on rank 0: locked for the run's lifetime, checked
// before anything is written, and cleared only of what skein wrote (the
// entries listed in .skein-outputs). On --overwrite the previous run is set
// aside, not deleted, until the new run has completed an epoch or written a
// complete checkpoint: a new run that fails before brings it back whole. Every deletion and move walks the
// directory without following links (no_follow_fs.hpp). No torch here.
#include <string>
#include <vector>

#include "skein/training/checkpoint/no_follow_fs.hpp"
#include "skein/detail/export.hpp"

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

// Brings back the run an interrupted --overwrite had set aside in `dir`, if
// any (takes the lock for that moment). For commands that read a run
// (--resume, export, predict) before any RunDirectory exists.
SKEIN_EXPORT void recover_run_dir(const std::string& dir);

class SKEIN_EXPORT RunDirectory {
 public:
  // Creates `dir` when missing and takes its lock (.skein.lock, never through
  // a link) for this object's lifetime; a second process gets a ConfigError
  // naming the holder. A previous run an interrupted --overwrite had set
  // aside is brought back first, unless the new run had written a complete
  // checkpoint (new_run_checkpoint): then the new run is the run, and the
  // previous one goes for good.
  explicit RunDirectory(std::string dir);
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  const std::string& path() const { return dir_; }

  // Before any plugin is created (plugins may write as they start): moves the
  // outputs of the run found here into .skein-previous, so that nothing of it
  // changes until commit_new_run().
  void set_aside_previous_run();
  // After every plugin was created: records skein's own files and starts the
  // new list of outputs.
  void start_new_run();
  // For --resume and restarts: keeps everything, appends to the list.
  void continue_run();
  // The new run completed its first epoch, or wrote a complete checkpoint:
  // the previous run goes for good.
  void commit_new_run();
  // The newest complete periodic checkpoint the new run wrote (one listed
  // in its .skein-outputs), or "": once it has one, it is the run.
  std::string new_run_checkpoint() const;
  bool committed() const { return committed_; }
  // Whether a previous run waits in .skein-previous.
  bool holds_previous_run() const { return previous_aside_; }
  // After a new run failed before commit_new_run(): removes what this process
  // wrote, brings the previous run back, and removes the directory when this
  // process created it.
  void discard_failed_start();

 private:
  void restore_previous_run();
  void discard_previous_run();
  std::string dir_;
  no_follow::Dir root_;
  bool created_ = false;         // by this process
  bool previous_aside_ = false;  // set_aside_previous_run() moved a run away
  bool committed_ = false;
  int lock_fd_ = -1;
};

}  // namespace skein::core
