// libskein_base: the part of the SDK that needs no libtorch (only the header
// torch/version.h, for the fingerprint). The `skein` executable links it and
// not libskein_sdk, so that `skein --version`, `skein plugins` and the help
// texts start without loading libtorch; libskein_sdk links it publicly, so
// plugins see one home of these symbols as before.
#include "skein/errors.hpp"
#include "skein/plugin.hpp"
#include "skein/version.hpp"

namespace skein {

// Out-of-line destructors: the one home of the error types' vtables and typeinfo.
ConfigError::~ConfigError() = default;
PluginError::~PluginError() = default;

const char* to_string(PluginKind kind) {
  switch (kind) {
#define SKEIN_KIND_NAME_(KIND, INTERFACE) \
  case PluginKind::KIND:                  \
    return #KIND;
    SKEIN_PLUGIN_KINDS(SKEIN_KIND_NAME_)
#undef SKEIN_KIND_NAME_
    case PluginKind::unknown: break;
  }
  return "unknown";
}

const char* host_fingerprint() { return SKEIN_BUILD_FINGERPRINT; }

}  // namespace skein
