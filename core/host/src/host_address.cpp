#include "skein/host/host_address.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include "skein/errors.hpp"
#include "skein/io/quoted.hpp"

namespace skein::core {

namespace {

[[noreturn]] void refuse_host(const std::string& host, const std::string& from, const std::string& why) {
  throw ConfigError(from + "=" + quoted(host) + " " + why);
}

}  // namespace

void check_host_name(const std::string& host, const std::string& from) {
  if (host.empty()) refuse_host(host, from, "is empty: name the host of rank 0");
  if (host.size() > kMaxHostName)
    refuse_host(host, from, "is not a host name: longer than " + std::to_string(kMaxHostName) + " characters");
  for (const char c : host)
    if (static_cast<unsigned char>(c) <= ' ' || c == '\x7f')
      refuse_host(host, from, "is not a host name: it holds a space or a control character");
}

void resolve_host(const std::string& host, const std::string& from) {
  check_host_name(host, from);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (found) ::freeaddrinfo(found);
  if (rc != 0)
    refuse_host(host, from, std::string("does not resolve (") + ::gai_strerror(rc) +
                           "): check the name, or give rank 0's IP address");
}

}  // namespace skein::core
