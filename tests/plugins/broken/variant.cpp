// One do-nothing callback, compiled into several test plugins that differ in
// what they declare (see tests/CMakeLists.txt): its name, and optionally a
// foreign API major, a newer API minor, a foreign build fingerprint, or a
// required option.
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

namespace {
class Nothing final : public skein::Callback {
 public:
  explicit Nothing(const skein::PluginArgs&) {}
};
}  // namespace

#ifdef VARIANT_REQUIRED_OPTION
SKEIN_PLUGIN(Nothing, callback, VARIANT_NAME, "0.1.0", "Test plugin variant " VARIANT_NAME,
             SKEIN_OPTION("target", string, nullptr, "A required option"))
#else
SKEIN_PLUGIN(Nothing, callback, VARIANT_NAME, "0.1.0", "Test plugin variant " VARIANT_NAME)
#endif
