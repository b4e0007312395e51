#include "skein/io/memory.hpp"

#include <unistd.h>

#include <cstdio>
#include <limits>

namespace skein {

std::uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) bytes /= 1024, ++u;
  char out[32];
  std::snprintf(out, sizeof out, u == 0 || bytes >= 10 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return out;
}

}  // namespace skein
