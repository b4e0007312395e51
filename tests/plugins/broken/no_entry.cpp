// Declares its metadata but exports no factory.
#include "skein/plugin.hpp"

namespace {
const skein::OptionSpec kNoOptions[] = {{nullptr, skein::OptionType::object, nullptr, nullptr}};
}
extern "C" SKEIN_EXPORT const skein::PluginInfo skein_plugin_info = {
    skein::kPluginMagic, sizeof(skein::PluginInfo), SKEIN_API_MAJOR, SKEIN_API_MINOR,
    "no_entry", skein::PluginKind::callback, "0.1.0", "Has no skein_plugin_create",
    kNoOptions, 0, SKEIN_BUILD_FINGERPRINT};
