#include "skein/training/store/rendezvous.hpp"

#include <unistd.h>

#include <chrono>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "skein/history.hpp"
#include "skein/io/atomic_file.hpp"
#include "skein/io/input_file.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/io/store.hpp"
#include "skein/run.hpp"
#include "skein/run_store.hpp"
#include "skein/training/store/live_records.hpp"
#include "skein/training/store/store_keys.hpp"

namespace skein::core {

nlohmann::json IntegrityReport::to_json() const {
  nlohmann::json j = {{"world_size", digests.size()},
                      {"history_digests", digests},
                      {"consistent", consistent},
                      {"checked", enforced}};
  if (!recoveries.is_null()) j["recoveries"] = recoveries;
  return j;
}

namespace {

// Where the run's world size changed (elastic resumes), from history.json:
// [{"epoch": E, "world_size": W}] for each epoch that began on a new size.
nlohmann::json world_size_changes(const std::string& run_dir) {
  nlohmann::json changes = nlohmann::json::array();
  const auto text = read_whole_file(run_files::path(run_dir, run_files::kHistory));
  const nlohmann::json epochs = nlohmann::json::parse(text.value_or("[]"), nullptr, false);
  if (!epochs.is_array()) return changes;
  for (const auto& e : epochs) {
    auto size = e.is_object() ? e.find(history_key::kWorldSize) : e.end();
    if (size != e.end()) changes.push_back({{"epoch", e.value(history_key::kEpoch, 0L)}, {"world_size", *size}});
  }
  return changes;
}

}  // namespace

void IntegrityReport::write_run_json(const std::string& run_dir, const nlohmann::json& launch) const {
  nlohmann::json record = to_json();
  record["world_size_changes"] = world_size_changes(run_dir);
  if (launch.is_object()) record.update(launch);
  write_file_atomic(run_files::path(run_dir, run_files::kRunInfo), record.dump(2) + "\n");
}

std::string digest_key(const std::string& run_id, int rank) {
  return store_key::digest(run_id, rank);
}

Rendezvous::~Rendezvous() = default;

IntegrityReport collect_digests(c10d::Store& store, const std::string& run_id, int world_size) {
  IntegrityReport report;
  if (live_recovery_on(store, run_id)) {
    world_size = final_world_size(store, run_id, world_size);
    report.recoveries = recorded_recoveries(store, run_id);
  }
  std::vector<std::string> keys;
  for (int r = 0; r < world_size; ++r) keys.push_back(digest_key(run_id, r));
  try {
    store.wait(keys);
  } catch (const std::exception&) {
    // Timed out: report what arrived; the first missing rank is named below.
  }
  report.consistent = true;
  for (int r = 0; r < world_size; ++r) {
    report.digests.push_back(store.check({keys[r]}) ? store_get(store, keys[r]) : "");
    if (report.digests[r].rfind(kUnsyncedDigest, 0) == 0) report.enforced = false;
    if (!report.consistent) continue;
    if (report.digests[r].empty()) {
      report.consistent = false;
      report.message = "rank " + std::to_string(r) + " reported no history digest";
    } else if (report.digests[r] != report.digests[0]) {
      report.consistent = false;
      report.message = "history of rank " + std::to_string(r) + " (digest " + report.digests[r] +
                       ") differs from rank 0 (digest " + report.digests[0] + ")";
    }
  }
  return report;
}

namespace {

class StoreRendezvous final : public Rendezvous {
 public:
  // `file`: the FileStore's path ("" for a TCPStore).
  StoreRendezvous(c10::intrusive_ptr<c10d::Store> store, int port, std::string file = "")
      : store_(std::move(store)), port_(port), file_(std::move(file)) {}
  int port() const override { return port_; }
  void publish(const std::string& key, const std::string& value) override {
    store_set(*store_, key, value);
  }
  std::string fetch(const std::string& key) override { return store_get(*store_, key); }

  IntegrityReport collect_digests(const std::string& run_id, int world_size) override {
    return core::collect_digests(*store_, run_id, world_size);
  }
  c10d::Store& store() override { return *store_; }

  // ~FileStore returns at once when its file is gone.
  void abandon() override {
    if (!file_.empty()) ::unlink(file_.c_str());
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  int port_;
  std::string file_;
};

}  // namespace

std::unique_ptr<Rendezvous> Rendezvous::file_store(const std::string& path, int users,
                                                   double timeout_s) {
  return std::make_unique<StoreRendezvous>(open_file_store(path, users, timeout_s), 0, path);
}

std::unique_ptr<Rendezvous> Rendezvous::tcp_server(int port, int world_size, double timeout_s) {
  auto store = c10::make_intrusive<c10d::TCPStore>(
      "127.0.0.1", tcp_store_options(port, true, world_size, timeout_s));
  return std::make_unique<StoreRendezvous>(store, store->getPort());
}

std::unique_ptr<Rendezvous> Rendezvous::tcp_client(const std::string& host, int port, int world_size,
                                                   double timeout_s) {
  auto store = c10::make_intrusive<c10d::TCPStore>(
      host, tcp_store_options(port, false, world_size, timeout_s));
  return std::make_unique<StoreRendezvous>(store, port);
}

}  // namespace skein::core
