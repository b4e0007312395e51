// The tests' fault injection: preloaded (LD_PRELOAD) into skein processes, it
// replaces libskein_core's no-op skein_fault_point and kills the process at
// the point a test names in the environment:
//   SKEIN_TEST_CRASH_IN_CHECKPOINT=E       _exit(86) halfway through writing
//                                          epoch E's checkpoint
//   SKEIN_TEST_TERM_IN_CHECKPOINT=E        SIGTERM to itself halfway through
//                                          writing epoch E's checkpoint (the
//                                          write goes on: what happens next
//                                          is the process's signal handling)
//   SKEIN_TEST_KILL_AT_CHECKPOINT_STEP=N   SIGKILL at the N-th checkpoint step
//                                          (a file written, a directory synced,
//                                          a rename, a link) of the process
//   SKEIN_TEST_KILL_IN_HAND_OVER=R         SIGKILL in worker rank R (RANK; never a
//                                          replacement) at its first hand-over
//                                          of live recovery, the new group built
//                                          and the leader's state not yet sent
//   SKEIN_TEST_TEAR_STORE_WRITE_RANK=R     worker rank R (RANK) of a launcher's
//                                          first attempt writes half of its
//                                          first write of 64 KiB or more
//                                          to the launcher's FileStore
//                                          (a file named store<N>), then
//                                          SIGKILLs itself: a torn record, as
//                                          an OOM kill inside a checkpoint's
//                                          shard stream leaves one
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

long env_long(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atol(v) : 0L;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void skein_fault_point(const char* name, long value) {
  if (std::strcmp(name, "checkpoint.halfway") == 0) {
    static const long crash_epoch = env_long("SKEIN_TEST_CRASH_IN_CHECKPOINT");
    if (crash_epoch > 0 && value == crash_epoch) std::_Exit(86);
    static const long term_epoch = env_long("SKEIN_TEST_TERM_IN_CHECKPOINT");
    if (term_epoch > 0 && value == term_epoch) ::kill(::getpid(), SIGTERM);
  } else if (std::strcmp(name, "live.hand_over") == 0) {
    static const char* rank = std::getenv("SKEIN_TEST_KILL_IN_HAND_OVER");
    static const char* mine = std::getenv("RANK");
    if (rank && mine && std::strcmp(rank, mine) == 0 && !std::getenv("SKEIN_LIVE_JOIN")) ::kill(::getpid(), SIGKILL);
  } else if (std::strcmp(name, "checkpoint.step") == 0) {
    static const long kill_at = env_long("SKEIN_TEST_KILL_AT_CHECKPOINT_STEP");
    static long steps = 0;
    if (kill_at > 0 && ++steps == kill_at) ::kill(::getpid(), SIGKILL);
  }
}

namespace {

// Whether `fd` is the launcher's FileStore (its private directory's store<N>).
bool is_launcher_store(int fd) {
  char link[64], path[PATH_MAX];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = ::readlink(link, path, sizeof path - 1);
  if (n <= 0) return false;
  path[n] = '\0';
  const char* base = std::strrchr(path, '/');
  return base && std::strncmp(base + 1, "store", 5) == 0 && std::strstr(path, "skein-rdzv-");
}

bool tears_store_writes() {
  static const bool tear = [] {
    const char* rank = std::getenv("SKEIN_TEST_TEAR_STORE_WRITE_RANK");
    const char* mine = std::getenv("RANK");
    const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
    return rank && mine && std::strcmp(rank, mine) == 0 && attempt && std::strcmp(attempt, "0") == 0;
  }();
  return tear;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) ssize_t write(int fd, const void* buf, size_t count) {
  using Write = ssize_t (*)(int, const void*, size_t);
  static const Write real = reinterpret_cast<Write>(::dlsym(RTLD_NEXT, "write"));
  if (count >= (std::size_t{64} << 10) && tears_store_writes() && is_launcher_store(fd)) {
    real(fd, buf, count / 2);
    ::kill(::getpid(), SIGKILL);
  }
  return real(fd, buf, count);
}
