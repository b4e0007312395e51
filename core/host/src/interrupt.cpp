#include "skein/host/interrupt.hpp"

#include <signal.h>

#include <atomic>

namespace skein::core {

namespace {

std::atomic<int> g_pending{0};
struct sigaction g_previous_int {}, g_previous_term {};

extern "C" void on_interrupt(int sig) { g_pending.store(sig, std::memory_order_relaxed); }

}  // namespace

InterruptHandler::InterruptHandler() {
  g_pending.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // the second signal takes the default action: the process ends
  ::sigaction(SIGINT, &sa, &g_previous_int);
  ::sigaction(SIGTERM, &sa, &g_previous_term);
}

InterruptHandler::~InterruptHandler() {
  ::sigaction(SIGINT, &g_previous_int, nullptr);
  ::sigaction(SIGTERM, &g_previous_term, nullptr);
}

int pending_interrupt() { return g_pending.load(std::memory_order_relaxed); }

Interrupted::~Interrupted() = default;

std::string signal_text(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signal);
}

}  // namespace skein::core
