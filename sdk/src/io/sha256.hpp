#pragma once
// SHA-256 of bytes (OpenSSL's libcrypto), for pinning files whose content is code: a
// CRC can be matched on purpose, this cannot.
#include <string>

namespace skein {

// The digest as 64 lowercase hex digits.
std::string sha256_hex(const std::string& bytes);

}  // namespace skein
