#pragma once
// The history backend over any c10d::Store, shared by the tcpstore and
// filestore plugins (which differ only in how they make the store).
//
// At each epoch end every rank publishes its batch records (one set); rank 0
// collects them, publishes the merge (one set), and every other rank fetches
// it (one get); each rank then counts itself done (one add) and the last one
// deletes the epoch's keys. So a rank other than 0 makes 3 store round trips
// per epoch, rank 0 makes world_size + 1, and the store holds no finished epoch.
#include <cstddef>
#include <string>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "skein/history_backend.hpp"
#include "skein/plugin.hpp"
#include "skein/run.hpp"

namespace skein_history {

// The keys of the history plugins in the run's store, all under
// "skein/history/" (the host's own keys: core/training/store/include/skein/training/store/store_keys.hpp).
inline std::string store_prefix(const std::string& run) { return "skein/history/" + run; }
inline std::string filestore_ready_key(const std::string& run) { return "skein/history/filestore_ready/" + run; }
inline std::string tcpstore_port_key(const std::string& run) { return "skein/history/tcp_port/" + run; }

// Live recovery (skein::WorldChangeListener): after a change of membership the
// ranks and world size are the new ones, and the keys of each membership are
// apart from those a lost rank may have left half written.
class StoreHistory : public skein::HistoryBackend, public skein::WorldChangeListener {
 public:
  // `store` is private to this backend or already prefixed by the caller.
  StoreHistory(c10::intrusive_ptr<c10d::Store> store, const skein::RunInfo& run);
  ~StoreHistory() override;
  void sync_epoch(skein::History& history) override;
  // Waits until every rank has closed, so the store may go away after it.
  void close() override;
  bool synchronizes_ranks() const override { return true; }
  void on_world_change(const skein::RunInfo& run, std::int64_t generation) override;
  std::size_t round_trips() const { return round_trips_; }

 protected:
  c10::intrusive_ptr<c10d::Store> store_;
  skein::RunInfo run_;

 private:
  std::size_t round_trips_ = 0;
  bool closed_ = false;
  std::string generation_;  // the membership's key prefix ("" for the first)
};

// The run's store under a prefix of this run's id, so that runs sharing a
// store (or a stale store file) never see each other's keys.
c10::intrusive_ptr<c10d::Store> prefixed(c10::intrusive_ptr<c10d::Store> store,
                                         const skein::RunInfo& run);

// A history plugin class from a function that makes its store.
template <c10::intrusive_ptr<c10d::Store> (*MakeStore)(const skein::PluginArgs&)>
class StoreHistoryPlugin final : public StoreHistory {
 public:
  explicit StoreHistoryPlugin(const skein::PluginArgs& args)
      : StoreHistory(prefixed(MakeStore(args), args.run), args.run) {}
};

}  // namespace skein_history
