#include "skein/training/engine/background_writes.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <mutex>

#include "skein/errors.hpp"

namespace skein::core {

namespace {

constexpr std::array<int, 3> kHeldSignals{SIGTERM, SIGINT, SIGHUP};
constexpr int kWriterNice = 10;
std::atomic<int> held_signal{0};

void hold_signal(int sig) { held_signal.store(sig); }

// While it lives, the termination signals whose action is the default
// (ending the process) are held (hold_signal); a handler the program set,
// such as a one-process run's InterruptHandler, which stops at the next
// batch boundary (the trainer then waits for the write as it unwinds), is
// left as it is. Its end puts the default actions back and delivers a
// signal that came meanwhile. One write is in flight at a time, so one of
// these lives at a time.
class HeldSignals {
 public:
  HeldSignals() {
    held_signal.store(0);
    for (std::size_t i = 0; i < kHeldSignals.size(); ++i) {
      struct sigaction now {};
      sigaction(kHeldSignals[i], nullptr, &now);
      if (now.sa_handler != SIG_DFL) continue;
      struct sigaction hold {};
      hold.sa_handler = hold_signal;
      sigemptyset(&hold.sa_mask);
      held_[i] = sigaction(kHeldSignals[i], &hold, nullptr) == 0;
    }
  }
  ~HeldSignals() {
    for (std::size_t i = 0; i < kHeldSignals.size(); ++i) {
      if (!held_[i]) continue;
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      sigaction(kHeldSignals[i], &dfl, nullptr);
    }
    if (const int sig = held_signal.exchange(0)) ::kill(::getpid(), sig);
  }
  HeldSignals(const HeldSignals&) = delete;
  HeldSignals& operator=(const HeldSignals&) = delete;

 private:
  std::array<bool, kHeldSignals.size()> held_{};
};

}  // namespace

BackgroundWrites::~BackgroundWrites() {
  try {
    finish();
  } catch (const std::exception& e) {
    warn(std::string("a checkpoint written in the background failed: ") + first_line(e.what()));
  }
}

void BackgroundWrites::start(std::function<void()> write) {
  finish();
  in_flight_ = std::async(std::launch::async, [write = std::move(write)] {
    // Training goes first where both want a core: the write takes the CPU
    // time training leaves (Linux: a thread's own nice value).
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), kWriterNice);
    HeldSignals held;
    write();
  });
}

void BackgroundWrites::finish() {
  if (!in_flight_.valid()) return;
  std::future<void> done = std::move(in_flight_);
  done.get();
}

}  // namespace skein::core
