#pragma once
// The machine's memory, as a bound on what a plugin may allocate from sizes
// it reads from a file or a config.
#include <cstdint>
#include <string>

#include "skein/detail/export.hpp"

namespace skein {

// Physical memory of this machine in bytes (sysconf), or UINT64_MAX if unknown.
SKEIN_EXPORT std::uint64_t physical_memory_bytes();

// "512 B", "3.5 MiB", "24 GiB", "2.9 TiB": a byte count for an error message.
SKEIN_EXPORT std::string format_bytes(double bytes);

}  // namespace skein
