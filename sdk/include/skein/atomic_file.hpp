#pragma once
#include <string>

#include "skein/export.hpp"

namespace skein {

// Writes `content` to `path` so that readers see the old file or the whole new
// one, never a part: a temporary file in the same directory, fsync, rename,
// fsync of the directory. Throws std::runtime_error naming the path.
SKEIN_EXPORT void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace skein
