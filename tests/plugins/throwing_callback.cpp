// A callback whose constructor fails as a careless plugin might: with a bare
// ConfigError that does not name the plugin (THROW_CONFIG_ERROR), or with
// something that is no exception class at all (THROW_NON_STANDARD).
#include "skein/callback.hpp"
#include "skein/errors.hpp"
#include "skein/plugin.hpp"

namespace {
class Throwing final : public skein::Callback {
 public:
  explicit Throwing(const skein::PluginArgs&) {
#ifdef THROW_NON_STANDARD
    throw 42;
#else
    throw skein::ConfigError("option 'level' is out of range");
#endif
  }
};
}  // namespace

SKEIN_PLUGIN(Throwing, callback, THROWING_NAME, "0.1.0", "Test plugin whose constructor throws")
