#pragma once
// Bytes from one rank to another through the run's c10d store, in chunks,
// at most two of them in the store at a time: neither rank nor the store's
// server (in rank 0's process, for a TCPStore) ever holds them whole. A
// sharded optimizer's shards travel so to rank 0 when it writes a checkpoint
// (hundreds of MB each: held whole, they set rank 0's peak).
//
// The reader paces the writer: it lets chunk k + 2 go once it has taken
// chunk k, and each chunk waits for that go. An empty chunk ends the stream.
// Every wait is bounded by the store's timeout.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "skein/detail/export.hpp"

namespace skein::core {

constexpr std::size_t kStoreChunkBytes = std::size_t{16} << 20;  // 16 MiB

// The sending end of the stream whose keys start with `prefix`.
class SKEIN_EXPORT StoreStreamWriter {
 public:
  StoreStreamWriter(c10d::Store& store, std::string prefix, std::size_t chunk_bytes = kStoreChunkBytes);
  // Buffers `size` bytes, sending each chunk as it fills.
  void write(const void* data, std::size_t size);
  // Sends what is buffered, then the end.
  void close();

 private:
  void send();

  c10d::Store& store_;
  std::string prefix_;
  std::size_t chunk_bytes_;
  std::vector<std::uint8_t> buffer_;
  long next_ = 0;
};

// Reads the stream under `prefix` to its end, giving each chunk to `sink`
// in order; leaves none of its keys in the store.
SKEIN_EXPORT void read_store_stream(c10d::Store& store, const std::string& prefix,
                                    const std::function<void(const std::vector<std::uint8_t>&)>& sink);

}  // namespace skein::core
