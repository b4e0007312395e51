#include "skein/training/checkpoint/digest.hpp"

#include <cstdio>
#include <stdexcept>
#include <vector>

#include "skein/io/input_file.hpp"

namespace skein::core {

std::string history_digest(const History& history) {
  nlohmann::json epochs = history.epochs();
  for (auto& e : epochs) e.erase("dur");
  return crc64_hex(encode_nonfinite(epochs).dump());
}

std::string Crc64::hex() const {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(crc_.checksum()));
  return hex;
}

std::string crc64_hex(const std::string& bytes) {
  Crc64 crc;
  crc.add(bytes.data(), bytes.size());
  return crc.hex();
}

std::optional<std::string> crc64_hex_of_file(const std::string& path) {
  try {
    RegularFileReader in(path);  // not a FIFO or device; no further than its size
    Crc64 crc;
    std::vector<char> piece(1 << 20);
    while (const std::size_t n = in.read(piece.data(), piece.size())) crc.add(piece.data(), n);
    return crc.hex();
  } catch (const std::runtime_error&) {
    return std::nullopt;
  }
}

Crc64Streambuf::int_type Crc64Streambuf::overflow(int_type ch) {
  if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
  const int_type put = target_.sputc(traits_type::to_char_type(ch));
  if (traits_type::eq_int_type(put, traits_type::eof())) return put;
  const char byte = traits_type::to_char_type(ch);
  crc_.add(&byte, 1);
  return ch;
}

std::streamsize Crc64Streambuf::xsputn(const char* bytes, std::streamsize size) {
  const std::streamsize taken = target_.sputn(bytes, size);
  if (taken > 0) crc_.add(bytes, static_cast<std::size_t>(taken));
  return taken;
}

}  // namespace skein::core
