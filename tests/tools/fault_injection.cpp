// The tests' fault injection: preloaded (LD_PRELOAD) into skein processes, it
// replaces libskein_core's no-op skein_fault_point and kills the process at
// the point a test names in the environment:
//   SKEIN_TEST_CRASH_IN_CHECKPOINT=E       _exit(86) halfway through writing
//                                          epoch E's checkpoint
//   SKEIN_TEST_KILL_AT_CHECKPOINT_STEP=N   SIGKILL at the N-th checkpoint step
//                                          (a file written, a directory synced,
//                                          a rename, a link) of the process
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

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
  } else if (std::strcmp(name, "checkpoint.step") == 0) {
    static const long kill_at = env_long("SKEIN_TEST_KILL_AT_CHECKPOINT_STEP");
    static long steps = 0;
    if (kill_at > 0 && ++steps == kill_at) ::kill(::getpid(), SIGKILL);
  }
}
