#include "skein/training/digest.hpp"

#include <cstdio>
#include <fstream>
#include <vector>

#include <boost/crc.hpp>

namespace skein::core {

std::string history_digest(const History& history) {
  nlohmann::json epochs = history.epochs();
  for (auto& e : epochs) e.erase("dur");
  return crc64_hex(encode_nonfinite(epochs).dump());
}

namespace {

using Crc64 = boost::crc_optimal<64, 0x42F0E1EBA9EA3693ULL, ~0ULL, ~0ULL, true, true>;

std::string hex_of(const Crc64& crc) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(crc.checksum()));
  return hex;
}

}  // namespace

std::string crc64_hex(const std::string& bytes) {
  Crc64 crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return hex_of(crc);
}

std::optional<std::string> crc64_hex_of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  Crc64 crc;
  std::vector<char> piece(1 << 20);
  while (in) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    crc.process_bytes(piece.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) return std::nullopt;
  return hex_of(crc);
}

}  // namespace skein::core
