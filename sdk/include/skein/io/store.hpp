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

// A c10d::FileStore over the file `path`, shared by `users` processes, every
// operation bounded by `timeout_s`. A failed operation (a full disk: "write:
// No space left on device") throws std::runtime_error naming the file, and
// the store then never ends the process: libtorch's FileStore appends to its
// file in its destructor, and a failure there throws out of a destructor
// (std::terminate, "Aborted"), or re-reads forever a last record a failed
// write left torn. Once an operation of this process has failed, the file
// is removed before that destructor runs, which then returns at once (the
// run is failing anyway; the other processes' next operations fail too).
SKEIN_EXPORT c10::intrusive_ptr<c10d::Store> open_file_store(const std::string& path, int users, double timeout_s);

// String helpers over the byte-vector API.
SKEIN_EXPORT void store_set(c10d::Store& store, const std::string& key, const std::string& value);
SKEIN_EXPORT std::string store_get(c10d::Store& store, const std::string& key);

}  // namespace skein
