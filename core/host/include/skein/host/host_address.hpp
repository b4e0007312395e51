#pragma once
// A run's master address, checked before a store is made of it: libtorch's
// TCPStore retries a host it cannot resolve until the store's timeout (300 s
// by default), warning at each try with the whole name, so a typo or a
// 100 KB value would hang a rank for minutes and flood its log. Torch-free
// (libskein_host).
#include <string>

#include "skein/detail/export.hpp"

namespace skein::core {

// The longest host name DNS allows (RFC 1035: 253 characters written out).
inline constexpr std::size_t kMaxHostName = 253;

// Throws ConfigError, one line naming `from` (an environment variable,
// "--master-addr") and `host` shortened, when `host` is empty, longer than
// kMaxHostName or holds a character no host name or IP address has.
SKEIN_EXPORT void check_host_name(const std::string& host, const std::string& from);

// check_host_name, then resolves `host` (getaddrinfo, at once): a
// ConfigError naming `from` and the resolver's reason when it does not.
SKEIN_EXPORT void resolve_host(const std::string& host, const std::string& from);

}  // namespace skein::core
