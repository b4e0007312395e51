#pragma once
// Checkpoints written on a thread of their own while training goes on
// (checkpoint_writer.hpp, config key checkpoint_background): at most one in
// flight; the next waits for it. A termination signal (SIGTERM, SIGINT,
// SIGHUP) that would end the process at once (its default action) while a
// write is in flight is held until the write is done, then delivered: the
// process never ends with a checkpoint half written, short of SIGKILL
// (which leaves the previous checkpoints complete).
#include <exception>
#include <functional>
#include <future>

#include "skein/detail/export.hpp"

namespace skein::core {

class SKEIN_EXPORT BackgroundWrites {
 public:
  BackgroundWrites() = default;
  // Waits for the write in flight; its failure becomes a warning.
  ~BackgroundWrites();
  BackgroundWrites(const BackgroundWrites&) = delete;
  BackgroundWrites& operator=(const BackgroundWrites&) = delete;

  // Runs `write` on a new thread once the write in flight (if any) is done;
  // that one's failure is thrown here instead, and `write` does not run.
  void start(std::function<void()> write);
  // Waits for the write in flight and throws its failure.
  void finish();
  bool in_flight() const { return in_flight_.valid(); }

 private:
  std::future<void> in_flight_;
};

}  // namespace skein::core
