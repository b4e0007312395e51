#include "idx_file.hpp"

#include <zlib.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

namespace skein_idx {

namespace {

// gzread reads gzip and plain files alike.
std::vector<std::uint8_t> read_all(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(path + ": cannot open");
  std::unique_ptr<gzFile_s, int (*)(gzFile)> guard(f, gzclose);
  std::vector<std::uint8_t> out;
  std::uint8_t chunk[1 << 16];
  for (;;) {
    int n = gzread(f, chunk, sizeof chunk);
    if (n < 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      throw std::runtime_error(path + ": corrupt or truncated gzip data (" + msg + ")");
    }
    if (n == 0) break;
    out.insert(out.end(), chunk, chunk + n);
  }
  return out;
}

std::uint32_t big_endian_u32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

}  // namespace

IdxArray read_idx(const std::string& path) { return parse_idx(read_all(path), path); }

IdxArray parse_idx(const std::vector<std::uint8_t>& bytes, const std::string& path) {
  // Header: two zero bytes, a type code (0x08 = unsigned byte), the number of
  // dimensions, then one big-endian uint32 per dimension.
  if (bytes.size() < 4) throw std::runtime_error(path + ": too short for an IDX header");
  if (bytes[0] != 0 || bytes[1] != 0) {
    char magic[16];
    std::snprintf(magic, sizeof magic, "0x%02x%02x%02x%02x", bytes[0], bytes[1], bytes[2], bytes[3]);
    throw std::runtime_error(path + ": bad magic " + magic + " (not an IDX file)");
  }
  if (bytes[2] != 0x08)
    throw std::runtime_error(path + ": IDX element type 0x" + std::to_string(bytes[2]) +
                             " is not supported (only unsigned byte, 0x08)");
  const std::size_t ndims = bytes[3];
  if (ndims == 0) throw std::runtime_error(path + ": IDX file declares no dimensions");
  const std::size_t header = 4 + 4 * ndims;
  if (bytes.size() < header) throw std::runtime_error(path + ": truncated IDX header");
  IdxArray arr;
  std::size_t expected = 1;
  for (std::size_t i = 0; i < ndims; ++i) {
    arr.dims.push_back(big_endian_u32(&bytes[4 + 4 * i]));
    if (__builtin_mul_overflow(expected, static_cast<std::size_t>(arr.dims.back()), &expected))
      throw std::runtime_error(path + ": IDX dimensions too large (their product overflows)");
  }
  const std::size_t body = bytes.size() - header;
  if (body < expected)
    throw std::runtime_error(path + ": truncated: header promises " + std::to_string(expected) +
                             " bytes of data, file has " + std::to_string(body));
  if (body > expected)
    throw std::runtime_error(path + ": " + std::to_string(body - expected) +
                             " unexpected bytes after the data");
  arr.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return arr;
}

}  // namespace skein_idx
