// A plugin whose second option declares an integer but defaults to 0.5: it
// must not compile (see the test plugin_with_a_bad_default_does_not_compile).
#include "skein/callback.hpp"
#include "skein/plugin.hpp"

namespace {
class Nothing final : public skein::Callback {
 public:
  explicit Nothing(const skein::PluginArgs&) {}
};
}  // namespace

SKEIN_PLUGIN(Nothing, callback, "bad_default", "0.1.0", "Test plugin with a wrong default",
             SKEIN_OPTION("fine", integer, "3", "A valid default"),
             SKEIN_OPTION("rate", integer, "0.5", "A number where an integer is declared"))
