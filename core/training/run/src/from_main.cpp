#include "skein/training/run/from_main.hpp"

#include <sstream>
#include <stdexcept>

#include "skein/errors.hpp"
#include "skein/io/store.hpp"

namespace skein::core {

namespace {
// The store's timeout in seconds, as an error line gives it.
std::string timeout_text(const c10d::Store& store) {
  std::ostringstream seconds;
  seconds << static_cast<double>(store.getTimeout().count()) / 1000.0;
  return seconds.str();
}
}  // namespace

std::string from_main(const RunStore& store, const RunInfo& run, const std::string& key, const std::string& value) {
  if (run.world_size == 1) return value;
  if (!store) {
    if (run.is_main()) return value;
    throw std::logic_error("rank " + std::to_string(run.rank) + " needs the run's store to read '" + key +
                           "' from rank 0");
  }
  if (run.is_main()) {
    store_set(*store.store, key, value);
    return value;
  }
  try {
    return store_get(*store.store, key);  // waits, bounded by the store's timeout
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(run.rank) + ": rank 0's value of '" + key +
                             "' did not arrive through the run's store within " + timeout_text(*store.store) +
                             " s (SKEIN_TIMEOUT_S): " + first_line(e.what()));
  }
}

std::vector<std::string> every_rank_value(const RunStore& store, const RunInfo& run, const std::string& key,
                                          const std::string& value, const std::string& what) {
  if (run.world_size == 1 || !store) return {value};
  c10d::Store& s = *store.store;
  auto rank_key = [&](int r) { return key + "/" + std::to_string(r); };
  store_set(s, rank_key(run.rank), value);
  std::vector<std::string> keys;
  for (int r = 0; r < run.world_size; ++r) keys.push_back(rank_key(r));
  try {
    s.wait(keys);  // bounded by the store's timeout
  } catch (const std::exception& e) {
    std::string missing;
    for (int r = 0; r < run.world_size; ++r)
      if (!s.check({rank_key(r)})) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    throw std::runtime_error("rank " + std::to_string(run.rank) + ": " + what + " of rank(s) " +
                             (missing.empty() ? std::string("?") : missing) +
                             " did not arrive through the run's store within " + timeout_text(s) +
                             " s (SKEIN_TIMEOUT_S): " + first_line(e.what()));
  }
  std::vector<std::string> values;
  for (int r = 0; r < run.world_size; ++r) values.push_back(store_get(s, rank_key(r)));
  if (s.add(key + "/read", 1) == run.world_size) {  // the last reader
    for (const std::string& k : keys) s.deleteKey(k);
    s.deleteKey(key + "/read");
  }
  return values;
}

}  // namespace skein::core
