#pragma once
#include <optional>
#include <string>

namespace skein::core {

// The bytes of section `name` of the 64-bit little-endian ELF file at `path`,
// or nullopt when the file is not such an ELF file or has no such section
// (or one over 16 MiB).
// Reads the file only: nothing is loaded or run.
std::optional<std::string> read_elf_section(const std::string& path, const std::string& name);

}  // namespace skein::core
