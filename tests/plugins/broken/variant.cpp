// One do-nothing callback, compiled into several test plugins that differ in
// what they declare (see tests/CMakeLists.txt): its name, and optionally a
// foreign API major, a newer API minor, a foreign build fingerprint, a
// required option, or a crash while it loads or is created.
#include "skein/callback.hpp"
#include "skein/plugin.hpp"

#ifdef VARIANT_API_MAJOR
#undef SKEIN_API_MAJOR
#define SKEIN_API_MAJOR VARIANT_API_MAJOR
#endif
#ifdef VARIANT_API_MINOR
#undef SKEIN_API_MINOR
#define SKEIN_API_MINOR VARIANT_API_MINOR
#endif
#ifdef VARIANT_FOREIGN_TORCH
#undef SKEIN_BUILD_FINGERPRINT
#define SKEIN_BUILD_FINGERPRINT "sdk=0.1.0;torch=9.9;cxx11abi=1;compiler=gcc-12"
#endif

#ifdef VARIANT_CRASHES
#include <csignal>
#include <cstdlib>
#include <cstring>

namespace {
// SKEIN_TEST_CRASH_IN=load|create: SIGSEGV while its library loads (a
// static initializer) or while it is created; SKEIN_TEST_CRASH_WITH=abort
// aborts instead. Unset: a plugin like the others.
bool crashes_in(const char* when) {
  const char* in = std::getenv("SKEIN_TEST_CRASH_IN");
  return in && std::strcmp(in, when) == 0;
}
void crash() {
  const char* with = std::getenv("SKEIN_TEST_CRASH_WITH");
  if (with && std::strcmp(with, "abort") == 0) std::abort();
  std::raise(SIGSEGV);
}
[[maybe_unused]] const bool crashed_while_loading = crashes_in("load") ? (crash(), true) : false;
}  // namespace
#endif

namespace {
class Nothing final : public skein::Callback {
 public:
  explicit Nothing(const skein::PluginArgs&) {
#ifdef VARIANT_CRASHES
    if (crashes_in("create")) crash();
#endif
  }
};
}  // namespace

#ifdef VARIANT_REQUIRED_OPTION
SKEIN_PLUGIN(Nothing, callback, VARIANT_NAME, "0.1.0", "Test plugin variant " VARIANT_NAME,
             SKEIN_OPTION("target", string, nullptr, "A required option"))
#else
SKEIN_PLUGIN(Nothing, callback, VARIANT_NAME, "0.1.0", "Test plugin variant " VARIANT_NAME)
#endif
