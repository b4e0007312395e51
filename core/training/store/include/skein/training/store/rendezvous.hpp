#pragma once
// The store a launcher hosts for its workers, and the end-of-run integrity
// check over it. Torch-free header: the launcher includes it.
#include <memory>
#include <string>
#include <vector>

#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"

namespace c10d {
class Store;
}

namespace skein::core {

// Every rank's history digest, and whether they all agree.
struct IntegrityReport {
  std::vector<std::string> digests;  // by rank; "" where a rank reported none
  bool consistent = false;
  // False when a rank's history backend does not synchronize ranks (local):
  // differing histories are then expected, not an error.
  bool enforced = true;
  std::string message;  // what differs, for the error line
  // A run with live recovery: each recovery (live_records.hpp), else null.
  nlohmann::json recoveries;
  SKEIN_EXPORT nlohmann::json to_json() const;
  // <run_dir>/run.json: this report plus `launch` (the launcher's facts).
  // The one writer of that file, used by whoever compared the digests: node
  // 0's launcher, or rank 0 of a run started without it.
  SKEIN_EXPORT void write_run_json(const std::string& run_dir, const nlohmann::json& launch = nullptr) const;
};

// Prefix of a digest published by a rank whose history is not synchronized.
constexpr const char* kUnsyncedDigest = "unsynced:";

// Store key where rank r of run `run_id` publishes its digest (the id keeps
// the attempts of a restarted run apart).
SKEIN_EXPORT std::string digest_key(const std::string& run_id, int rank);

// Waits up to the store's timeout for the digests of ranks [0, world_size)
// and compares them; a run with live recovery: of the ranks it ended with.
SKEIN_EXPORT IntegrityReport collect_digests(c10d::Store& store, const std::string& run_id,
                                             int world_size);

class SKEIN_EXPORT Rendezvous {
 public:
  // A FileStore at `path` shared by `users` processes (the launcher included).
  static std::unique_ptr<Rendezvous> file_store(const std::string& path, int users, double timeout_s);
  // A TCPStore server on `port` (0: any free port; libtorch's TCPStore binds every interface).
  static std::unique_ptr<Rendezvous> tcp_server(int port, int world_size, double timeout_s);
  // A client of a TCPStore served elsewhere (other nodes' launchers).
  static std::unique_ptr<Rendezvous> tcp_client(const std::string& host, int port, int world_size,
                                                double timeout_s);
  virtual ~Rendezvous();

  virtual int port() const = 0;  // the TCP port (0 for a FileStore)
  virtual void publish(const std::string& key, const std::string& value) = 0;
  virtual std::string fetch(const std::string& key) = 0;  // waits up to the timeout
  virtual IntegrityReport collect_digests(const std::string& run_id, int world_size) = 0;
  virtual c10d::Store& store() = 0;
  // After an attempt that failed, before this object goes: its workers are
  // stopped, and one killed inside a write may have left the FileStore's file
  // ending in a torn record, which libtorch's FileStore would read forever
  // (its reader loops on a short read), its own clean-up in the destructor
  // included. The file is removed, so nothing reads it again (a restart gets
  // a new one). Nothing to do for a TCPStore.
  virtual void abandon() = 0;
};

}  // namespace skein::core
