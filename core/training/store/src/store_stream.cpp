#include "skein/training/store/store_stream.hpp"

#include <algorithm>

namespace skein::core {

namespace {

std::string stream_chunk_key(const std::string& prefix, long k) { return prefix + "/chunk/" + std::to_string(k); }
std::string stream_go_key(const std::string& prefix, long k) { return prefix + "/go/" + std::to_string(k); }

const std::vector<std::uint8_t> kStreamGo{1};

}  // namespace

StoreStreamWriter::StoreStreamWriter(c10d::Store& store, std::string prefix, std::size_t chunk_bytes)
    : store_(store), prefix_(std::move(prefix)), chunk_bytes_(std::max<std::size_t>(chunk_bytes, 1)) {
  buffer_.reserve(chunk_bytes_);
}

void StoreStreamWriter::write(const void* data, std::size_t size) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  while (size > 0) {
    const std::size_t n = std::min(size, chunk_bytes_ - buffer_.size());
    buffer_.insert(buffer_.end(), bytes, bytes + n);
    bytes += n;
    size -= n;
    if (buffer_.size() == chunk_bytes_) send();
  }
}

void StoreStreamWriter::close() {
  if (!buffer_.empty()) send();
  send();  // empty: the end
}

void StoreStreamWriter::send() {
  const std::string go = stream_go_key(prefix_, next_);
  store_.wait({go}, store_.getTimeout());  // the store's own bound (HashStore's plain wait has another)
  store_.deleteKey(go);
  store_.set(stream_chunk_key(prefix_, next_), buffer_);
  buffer_.clear();
  ++next_;
}

void read_store_stream(c10d::Store& store, const std::string& prefix,
                       const std::function<void(const std::vector<std::uint8_t>&)>& sink) {
  store.set(stream_go_key(prefix, 0), kStreamGo);
  store.set(stream_go_key(prefix, 1), kStreamGo);
  for (long k = 0;; ++k) {
    const std::string key = stream_chunk_key(prefix, k);
    const std::vector<std::uint8_t> chunk = store.get(key);
    store.deleteKey(key);
    if (chunk.empty()) {
      store.deleteKey(stream_go_key(prefix, k + 1));  // let go, never taken
      return;
    }
    store.set(stream_go_key(prefix, k + 2), kStreamGo);
    sink(chunk);
  }
}

}  // namespace skein::core
