#pragma once
#include <optional>
#include <string>

#include "skein/detail/export.hpp"
#include "skein/history.hpp"

namespace skein::core {

// A CRC-64 (ECMA-182 polynomial, as in xz) of the history's JSON without the
// epoch durations: equal on every rank exactly when their histories agree.
SKEIN_EXPORT std::string history_digest(const History& history);

// The same CRC-64 of any bytes, as 16 hex digits (checkpoint file checksums).
SKEIN_EXPORT std::string crc64_hex(const std::string& bytes);
// ... of a file's bytes, read a piece at a time (nullopt: unreadable).
SKEIN_EXPORT std::optional<std::string> crc64_hex_of_file(const std::string& path);

}  // namespace skein::core
