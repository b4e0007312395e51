#pragma once
#include <optional>
#include <streambuf>
#include <string>

#include <boost/crc.hpp>

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

// ... of bytes given a piece at a time: hex() is crc64_hex of all of them.
class SKEIN_EXPORT Crc64 {
 public:
  void add(const char* bytes, std::size_t size) { crc_.process_bytes(bytes, size); }
  std::string hex() const;

 private:
  boost::crc_optimal<64, 0x42F0E1EBA9EA3693ULL, ~0ULL, ~0ULL, true, true> crc_;
};

// An output stream buffer that passes every byte on to `target` and adds it
// to a Crc64 on the way: a file's checksum as it is written, without reading
// the file back. Unbuffered (`target` buffers); no seeking.
class SKEIN_EXPORT Crc64Streambuf : public std::streambuf {
 public:
  explicit Crc64Streambuf(std::streambuf& target) : target_(target) {}
  // The CRC-64 of the bytes `target` took so far.
  std::string hex() const { return crc_.hex(); }

 protected:
  int_type overflow(int_type ch) override;
  std::streamsize xsputn(const char* bytes, std::streamsize size) override;
  int sync() override { return target_.pubsync(); }

 private:
  std::streambuf& target_;
  Crc64 crc_;
};

}  // namespace skein::core
