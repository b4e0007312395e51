#pragma once
// The run's rendezvous store: a c10d FileStore (one machine, our launcher) or
// TCPStore (several machines, or an external launcher), shared by every
// plugin that needs to talk across ranks (history sync, process groups).
#include <chrono>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "skein/export.hpp"

namespace skein {

struct RunStore {
  enum class Kind { none, file, tcp };
  Kind kind = Kind::none;
  c10::intrusive_ptr<c10d::Store> store;  // null when kind == none
  explicit operator bool() const { return static_cast<bool>(store); }
};

// A timeout given in seconds (as RunInfo::timeout_s), as c10d takes it.
inline std::chrono::milliseconds to_millis(double seconds) {
  return std::chrono::milliseconds(static_cast<long>(seconds * 1000));
}

// TCPStore options as Skein uses them: `world_size` workers, none waited for
// at start, every operation bounded by `timeout_s`.
SKEIN_EXPORT c10d::TCPStoreOptions tcp_store_options(int port, bool is_server, int world_size,
                                                     double timeout_s);

// String helpers over the byte-vector API.
SKEIN_EXPORT void store_set(c10d::Store& store, const std::string& key, const std::string& value);
SKEIN_EXPORT std::string store_get(c10d::Store& store, const std::string& key);

}  // namespace skein
