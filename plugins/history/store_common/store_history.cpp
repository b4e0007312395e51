#include "store_history.hpp"

#include <cstring>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "skein/io/store.hpp"
#include "skein/run_store.hpp"

namespace skein_history {

namespace {

// Merged epoch: u32 ranks, then per rank u64 length + BatchLog bytes.
std::string pack(const std::vector<std::string>& parts) {
  std::string out;
  auto n = static_cast<std::uint32_t>(parts.size());
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  for (const auto& p : parts) {
    auto len = static_cast<std::uint64_t>(p.size());
    out.append(reinterpret_cast<const char*>(&len), sizeof len);
    out += p;
  }
  return out;
}

std::vector<skein::BatchLog> unpack(const std::string& bytes, int world) {
  std::vector<skein::BatchLog> logs;
  std::size_t pos = 0;
  auto take = [&](void* dst, std::size_t n) {
    if (pos + n > bytes.size()) throw std::runtime_error("history store: truncated merged epoch");
    std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
  };
  std::uint32_t n = 0;
  take(&n, sizeof n);
  if (static_cast<int>(n) != world)
    throw std::runtime_error("history store: merged epoch has " + std::to_string(n) +
                             " ranks, expected " + std::to_string(world));
  for (std::uint32_t r = 0; r < n; ++r) {
    std::uint64_t len = 0;
    take(&len, sizeof len);
    if (pos + len > bytes.size()) throw std::runtime_error("history store: truncated rank record");
    logs.push_back(skein::BatchLog::from_bytes(std::string_view(bytes).substr(pos, len)));
    pos += len;
  }
  return logs;
}

}  // namespace

c10::intrusive_ptr<c10d::Store> prefixed(c10::intrusive_ptr<c10d::Store> store,
                                         const skein::RunInfo& run) {
  return c10::make_intrusive<c10d::PrefixStore>(store_prefix(run.run_id), std::move(store));
}

StoreHistory::StoreHistory(c10::intrusive_ptr<c10d::Store> store, const skein::RunInfo& run)
    : store_(std::move(store)), run_(run) {}

StoreHistory::~StoreHistory() = default;

void StoreHistory::sync_epoch(skein::History& history) {
  const std::string epoch = generation_ + "e" + std::to_string(history.size()) + "/";
  const std::string mine = history.batches().to_bytes();
  const int world = run_.world_size;
  if (world == 1) {
    skein::store_set(*store_, epoch + "r0", mine);
    ++round_trips_;
    history.commit_batches();
  } else {
    std::vector<std::string> parts(static_cast<std::size_t>(world));
    std::string merged;
    if (run_.rank == 0) {
      parts[0] = mine;
      for (int r = 1; r < world; ++r) {
        parts[r] = skein::store_get(*store_, epoch + "r" + std::to_string(r));  // waits, bounded
        ++round_trips_;
      }
      merged = pack(parts);
      skein::store_set(*store_, epoch + "merged", merged);
    } else {
      skein::store_set(*store_, epoch + "r" + std::to_string(run_.rank), mine);
      merged = skein::store_get(*store_, epoch + "merged");
      ++round_trips_;
    }
    ++round_trips_;
    history.commit_batches(unpack(merged, world));
  }
  // The last rank to finish this epoch removes its keys.
  ++round_trips_;
  if (store_->add(epoch + "done", 1) == world) {
    for (int r = 0; r < world; ++r) store_->deleteKey(epoch + "r" + std::to_string(r));
    store_->deleteKey(epoch + "merged");
    store_->deleteKey(epoch + "done");
  }
}

void StoreHistory::close() {
  if (closed_) return;
  closed_ = true;
  // The last rank to close says so; rank 0 (which may host the store) waits for it.
  const std::string closed = generation_ + "closed", all_closed = generation_ + "all_closed";
  if (store_->add(closed, 1) == run_.world_size) skein::store_set(*store_, all_closed, "1");
  if (run_.rank == 0) {
    store_->wait({all_closed});
    store_->deleteKey(closed);
    store_->deleteKey(all_closed);
  }
}

void StoreHistory::on_world_change(const skein::RunInfo& run, std::int64_t generation) {
  run_ = run;
  generation_ = "g" + std::to_string(generation) + "/";
}

}  // namespace skein_history
