#pragma once
// Helpers over the run's c10d store (skein/run_store.hpp).
#include <chrono>
#include <string>

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "skein/detail/export.hpp"

namespace skein {

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
