#pragma once
// Ctrl-C and SIGTERM in a one-process `skein train`: the run stops at the
// next batch boundary, so that callbacks close their output, the model of the
// last complete epoch is kept and the user is told how to continue. A second
// signal ends the process at once (the default action is back by then).
// Multi-process runs leave both signals to their launcher, which stops every
// worker together (a rank stopping alone would leave its peers waiting).
#include <stdexcept>
#include <string>

#include "skein/detail/export.hpp"

namespace skein::core {

// Installs the handlers while it lives; the previous ones come back after.
class SKEIN_EXPORT InterruptHandler {
 public:
  InterruptHandler();
  ~InterruptHandler();
  InterruptHandler(const InterruptHandler&) = delete;
  InterruptHandler& operator=(const InterruptHandler&) = delete;
};

// The signal that asked the run to stop (SIGINT, SIGTERM), or 0. Cheap: an
// atomic load, checked before every batch.
SKEIN_EXPORT int pending_interrupt();

// Thrown at a batch boundary once a signal asked to stop; skein exits with
// 128 + the signal, as a shell reports a process the signal ended.
class SKEIN_EXPORT Interrupted : public std::runtime_error {
 public:
  Interrupted(int signal, const std::string& message) : std::runtime_error(message), signal_(signal) {}
  ~Interrupted() override;
  int signal() const { return signal_; }

 private:
  int signal_;
};

// "SIGINT", "SIGTERM", or "signal N".
SKEIN_EXPORT std::string signal_text(int signal);

}  // namespace skein::core
