#include "skein/training/engine/crash_report.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace skein::core {

namespace {

std::atomic<int> g_log_fd{-1};
int g_rank = 0;
char g_checkpoints[4096] = "";  // the run's checkpoints directory

bool same(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

// Whether the checkpoints directory holds a complete checkpoint that
// --resume takes (not `final` or `best`, not a .tmp-* half written), read
// with open and getdents64 (async-signal-safe: no allocation).
bool resumable_checkpoint_exists() {
  if (!g_checkpoints[0]) return false;
  const int fd = ::open(g_checkpoints, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  alignas(8) char buf[4096];
  bool found = false;
  for (long n; !found && (n = ::syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;) {
    for (long at = 0; at < n;) {
      const auto* entry = reinterpret_cast<const struct dirent64*>(buf + at);
      const char* name = entry->d_name;
      if (entry->d_type == DT_DIR && name[0] != '.' && !same(name, "final") && !same(name, "best")) found = true;
      at += entry->d_reclen;
    }
  }
  ::close(fd);
  return found;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV (segmentation fault)";
    case SIGABRT: return "SIGABRT (abort)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGFPE: return "SIGFPE (arithmetic error)";
    case SIGILL: return "SIGILL (illegal instruction)";
    default: return "a fatal signal";
  }
}

// Appends text to a fixed buffer: no allocation in a signal handler.
struct Line {
  char buf[512];
  std::size_t n = 0;
  void add(const char* s) {
    while (s && *s && n + 1 < sizeof buf) buf[n++] = *s++;
  }
  void add_int(int v) {
    char digits[12];
    int k = 0;
    if (v < 0) v = 0;
    do digits[k++] = static_cast<char>('0' + v % 10); while ((v /= 10) > 0 && k < 11);
    while (k > 0 && n + 1 < sizeof buf) buf[n++] = digits[--k];
  }
};

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t w = ::write(fd, data, size);
    if (w <= 0) return;
    data += w;
    size -= static_cast<std::size_t>(w);
  }
}

void on_fatal_signal(int sig) {
  Line line;
  line.add("skein: error: rank ");
  line.add_int(g_rank);
  line.add(": ");
  line.add(signal_name(sig));
  const char* plugin = running_plugin();
  if (plugin) {
    line.add(" in plugin '");
    line.add(plugin);
    line.add("' (");
    line.add(running_hook());
    line.add(")");
  } else {
    line.add(" outside any plugin hook");
  }
  line.add(resumable_checkpoint_exists() ? "; the newest complete checkpoint is resumable with --resume\n"
                                          : "; no checkpoint to resume from yet\n");
  write_all(STDERR_FILENO, line.buf, line.n);
  const int log = g_log_fd.load();
  if (log >= 0) write_all(log, line.buf, line.n);
  // SA_RESETHAND restored the default action: the signal ends the process
  // as it would have, with its exit status.
  ::raise(sig);
}

}  // namespace

void install_crash_handler(int rank) {
  g_rank = rank;
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) ::sigaction(sig, &sa, nullptr);
}

void set_crash_checkpoints(const std::string& dir) {
  const std::size_t n = std::min(dir.size(), sizeof g_checkpoints - 1);
  std::memcpy(g_checkpoints, dir.data(), n);
  g_checkpoints[n] = '\0';
}

void set_crash_log(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  const int old = g_log_fd.exchange(fd);
  if (old >= 0) ::close(old);
}

}  // namespace skein::core
