#include "skein/training/from_main.hpp"

#include <sstream>
#include <stdexcept>

#include "skein/errors.hpp"
#include "skein/io/store.hpp"

namespace skein::core {

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
    std::ostringstream seconds;
    seconds << static_cast<double>(store.store->getTimeout().count()) / 1000.0;
    throw std::runtime_error("rank " + std::to_string(run.rank) + ": rank 0's value of '" + key +
                             "' did not arrive through the run's store within " + seconds.str() +
                             " s (SKEIN_TIMEOUT_S): " + first_line(e.what()));
  }
}

}  // namespace skein::core
