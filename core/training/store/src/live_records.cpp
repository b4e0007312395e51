#include "skein/training/store/live_records.hpp"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "skein/io/store.hpp"
#include "skein/training/store/store_keys.hpp"

namespace skein::core {

void record_recovery(c10d::Store& store, const std::string& run_id, const nlohmann::json& recovery) {
  const auto n = store.add(store_key::live_recoveries(run_id), 1);
  store_set(store, store_key::live_recovery(run_id, n), recovery.dump());
}

nlohmann::json recorded_recoveries(c10d::Store& store, const std::string& run_id) {
  nlohmann::json all = nlohmann::json::array();
  const auto count = store.add(store_key::live_recoveries(run_id), 0);
  for (std::int64_t n = 1; n <= count; ++n) {
    const std::string key = store_key::live_recovery(run_id, n);
    // A leader lost between counting and writing its record leaves a gap.
    if (store.check({key})) all.push_back(nlohmann::json::parse(store_get(store, key)));
  }
  return all;
}

void record_final_world(c10d::Store& store, const std::string& run_id, int world_size) {
  store_set(store, store_key::live_final_world(run_id), std::to_string(world_size));
}

int final_world_size(c10d::Store& store, const std::string& run_id, int started_with) {
  const std::string key = store_key::live_final_world(run_id);
  return store.check({key}) ? std::stoi(store_get(store, key)) : started_with;
}

bool live_recovery_on(c10d::Store& store, const std::string& run_id) {
  return store.check({store_key::live_recovery_on(run_id)});
}

}  // namespace skein::core
