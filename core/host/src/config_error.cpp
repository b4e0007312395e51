#include "skein/host/config_error.hpp"

#include <utility>

namespace skein::core {

// Out of line: the one home of the class's vtable and typeinfo (libskein_host).
ConfigPathError::ConfigPathError(std::string path, const std::string& message)
    : ConfigError(message), path_(std::move(path)) {}
ConfigPathError::~ConfigPathError() = default;

}  // namespace skein::core
