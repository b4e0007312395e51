#include "skein/training/digest.hpp"

#include <cstdio>

#include <boost/crc.hpp>

namespace skein::core {

std::string history_digest(const History& history) {
  nlohmann::json epochs = history.epochs();
  for (auto& e : epochs) e.erase("dur");
  return crc64_hex(encode_nonfinite(epochs).dump());
}

std::string crc64_hex(const std::string& bytes) {
  boost::crc_optimal<64, 0x42F0E1EBA9EA3693ULL, ~0ULL, ~0ULL, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(crc.checksum()));
  return hex;
}

}  // namespace skein::core
