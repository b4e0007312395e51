#include "skein/run_store.hpp"

namespace skein {

void store_set(c10d::Store& store, const std::string& key, const std::string& value) {
  store.set(key, std::vector<std::uint8_t>(value.begin(), value.end()));
}

std::string store_get(c10d::Store& store, const std::string& key) {
  auto bytes = store.get(key);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace skein
