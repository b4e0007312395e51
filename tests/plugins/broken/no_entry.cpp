// Declares its metadata (manifest and skein_plugin_info) but exports no factory.
#include "skein/plugin.hpp"

namespace {
SKEIN_PLUGIN_MANIFEST(callback, "no_entry", "0.1.0", "Has no skein_plugin_create")
}
extern "C" SKEIN_EXPORT const skein::PluginInfo skein_plugin_info = {
    skein::kPluginMagic, sizeof(skein::PluginInfo), SKEIN_API_MAJOR, SKEIN_API_MINOR,
    "no_entry", skein::PluginKind::callback, "0.1.0", "Has no skein_plugin_create",
    skein_plugin_options_, 0, SKEIN_BUILD_FINGERPRINT};
