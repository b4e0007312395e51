// A plugin in all but its manifest: skein_plugin_info and a factory, no
// .skein_manifest section. Loading it would run its static initializer,
// which creates the file SKEIN_TEST_LOAD_MARKER names: a test sees that it
// was never loaded.
#include "../load_marker.hpp"
#include "skein/callback.hpp"
#include "skein/plugin.hpp"

namespace {

class Nothing final : public skein::Callback {
 public:
  explicit Nothing(const skein::PluginArgs&) {}
};

const skein::OptionSpec kNoOptions[] = {{nullptr, skein::OptionType::object, nullptr, nullptr}};

}  // namespace

extern "C" SKEIN_EXPORT const skein::PluginInfo skein_plugin_info = {
    skein::kPluginMagic, sizeof(skein::PluginInfo), SKEIN_API_MAJOR, SKEIN_API_MINOR,
    "no_manifest", skein::PluginKind::callback, "0.1.0", "Has no manifest section",
    kNoOptions, 0, SKEIN_BUILD_FINGERPRINT};
extern "C" SKEIN_EXPORT void* skein_plugin_create(const skein::PluginArgs* args) {
  return static_cast<skein::Callback*>(new Nothing(*args));
}
