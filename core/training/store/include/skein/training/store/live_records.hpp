#pragma once
// What live recovery leaves in the run's store for whoever writes run.json
// (the launcher's agent, or rank 0 under another launcher): each recovery,
// and the world size the run ended with (whose ranks report digests).
#include <string>

#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"

namespace c10d {
class Store;
}

namespace skein::core {

SKEIN_EXPORT void record_recovery(c10d::Store& store, const std::string& run_id, const nlohmann::json& recovery);
// The recoveries in the order recorded ([] when there were none).
SKEIN_EXPORT nlohmann::json recorded_recoveries(c10d::Store& store, const std::string& run_id);
SKEIN_EXPORT void record_final_world(c10d::Store& store, const std::string& run_id, int world_size);
// The world size recorded at the end, else `started_with`.
SKEIN_EXPORT int final_world_size(c10d::Store& store, const std::string& run_id, int started_with);
// Whether the run's processes train with live recovery (they said so when they started).
SKEIN_EXPORT bool live_recovery_on(c10d::Store& store, const std::string& run_id);

}  // namespace skein::core
