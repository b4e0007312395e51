// libskein_base: the part of the SDK that needs no libtorch (only the header
// torch/version.h, for the fingerprint). The `skein` executable links it and
// not libskein_sdk, so that `skein --version`, `skein plugins` and the help
// texts start without loading libtorch; libskein_sdk links it publicly, so
// plugins see one home of these symbols as before.
#include "skein/errors.hpp"
#include "skein/plugin.hpp"
#include "skein/detail/version.hpp"

namespace skein {

// Out-of-line destructors: the one home of the error types' vtables and typeinfo.
std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

ConfigError::ConfigError(const std::string& message) : std::runtime_error(printable(message)) {}
ConfigError::~ConfigError() = default;

OptionError::OptionError(std::string option, const std::string& message)
    : ConfigError(message), option_(std::move(option)) {}
OptionError::~OptionError() = default;
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
