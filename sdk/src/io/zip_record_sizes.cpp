#include "zip_record_sizes.hpp"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace skein {

namespace {

constexpr std::uint64_t kMaxDeflateRatio = 1032;

std::uint64_t le(const std::string& s, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + static_cast<std::size_t>(i)]);
  return v;
}

std::string read_at(std::ifstream& in, std::uint64_t at, std::uint64_t n) {
  std::string out(static_cast<std::size_t>(n), '\0');
  in.seekg(static_cast<std::streamoff>(at));
  in.read(out.data(), static_cast<std::streamsize>(n));
  return in ? out : std::string();
}

}  // namespace

std::map<std::string, std::uint64_t> check_zip_record_sizes(const std::string& path) {
  std::map<std::string, std::uint64_t> sizes;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return sizes;
  const auto file_size = static_cast<std::uint64_t>(in.tellg());
  // The end of central directory record: in the last 22 + 65535 bytes.
  const std::uint64_t tail_size = std::min<std::uint64_t>(file_size, 22 + 65535);
  const std::string tail = read_at(in, file_size - tail_size, tail_size);
  if (tail.size() < 22) return sizes;
  std::size_t eocd = tail.size() - 22 + 1;
  do {
    --eocd;
  } while (eocd > 0 && tail.compare(eocd, 4, "PK\x05\x06") != 0);
  if (tail.compare(eocd, 4, "PK\x05\x06") != 0) return sizes;
  std::uint64_t entries = le(tail, eocd + 10, 2), cd_size = le(tail, eocd + 12, 4), cd_at = le(tail, eocd + 16, 4);
  if ((entries == 0xffff || cd_size == 0xffffffff || cd_at == 0xffffffff) && eocd >= 20 &&
      tail.compare(eocd - 20, 4, "PK\x06\x07") == 0) {  // zip64: its own end record
    const std::string end64 = read_at(in, le(tail, eocd - 20 + 8, 8), 56);
    if (end64.size() < 56 || end64.compare(0, 4, "PK\x06\x06") != 0) return sizes;
    entries = le(end64, 32, 8), cd_size = le(end64, 40, 8), cd_at = le(end64, 48, 8);
  }
  if (cd_at > file_size || cd_size > file_size - cd_at) return sizes;
  const std::string cd = read_at(in, cd_at, cd_size);
  std::size_t at = 0;
  for (std::uint64_t i = 0; i < entries && at + 46 <= cd.size() && cd.compare(at, 4, "PK\x01\x02") == 0; ++i) {
    const auto method = le(cd, at + 10, 2), name_len = le(cd, at + 28, 2), extra_len = le(cd, at + 30, 2);
    std::uint64_t packed = le(cd, at + 20, 4), size = le(cd, at + 24, 4);
    const std::size_t extra_at = at + 46 + name_len;
    if (extra_at + extra_len + le(cd, at + 32, 2) > cd.size()) return sizes;
    const std::string name = cd.substr(at + 46, name_len);
    // Zip64: 8-byte sizes in extra field 0x0001, for the fields saturated above.
    for (std::size_t e = extra_at; e + 4 <= extra_at + extra_len;) {
      const auto id = le(cd, e, 2), len = le(cd, e + 2, 2);
      std::size_t f = e + 4;
      if (id == 1) {
        if (size == 0xffffffff && f + 8 <= e + 4 + len) size = le(cd, f, 8), f += 8;
        if (packed == 0xffffffff && f + 8 <= e + 4 + len) packed = le(cd, f, 8);
      }
      e += 4 + len;
    }
    const std::uint64_t most = method == 0 ? packed : packed * kMaxDeflateRatio;
    if (packed > file_size || size > most)
      throw std::runtime_error("record '" + name + "' declares " + std::to_string(size) +
                               " bytes, more than the file of " + std::to_string(file_size) + " bytes can hold");
    const std::size_t slash = name.find('/');
    std::uint64_t& known = sizes[slash == std::string::npos ? name : name.substr(slash + 1)];
    known = std::max(known, size);  // a name listed twice: the larger
    at = extra_at + extra_len + le(cd, at + 32, 2);
  }
  return sizes;
}

}  // namespace skein
