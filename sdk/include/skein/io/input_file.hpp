#pragma once
// Input files named by a user: a reader must see a regular file before it
// opens one, as a FIFO blocks the open and /dev/zero never ends.
#include <cstdint>
#include <optional>
#include <string>

#include "skein/detail/export.hpp"

namespace skein {

// The size in bytes of the regular file `path` (a symbolic link is followed).
// Throws std::runtime_error naming the path when it does not exist or is not
// a regular file: "'/dev/zero' is not a regular file (a character device)".
SKEIN_EXPORT std::uint64_t regular_file_size(const std::string& path);

// The whole content of the file `path`, or nullopt when it cannot be opened
// or read (the caller names the file in its own error).
SKEIN_EXPORT std::optional<std::string> read_whole_file(const std::string& path);

}  // namespace skein
