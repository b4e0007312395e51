#pragma once
// One value for the whole run, decided by rank 0 (its file system holds the
// run directory, its clock names it, ...) and read by the other ranks from
// the run's store; or every rank's value, for ranks to check they agree.
#include <string>
#include <vector>

#include "skein/detail/export.hpp"
#include "skein/run.hpp"
#include "skein/run_store.hpp"

namespace skein::core {

// Rank 0's `value` on every rank: rank 0 puts it under `key` in the run's
// store and returns it; every other rank waits for it there (at most the
// store's timeout) and returns it, ignoring its own `value`. A single process
// (or no store) returns `value` as it is. Rank 0's value not arriving is an
// error naming the key and the wait. A collective over the ranks that call
// it with the same key.
SKEIN_EXPORT std::string from_main(const RunStore& store, const RunInfo& run, const std::string& key,
                                   const std::string& value);

// Every rank's `value`, by rank, on every rank: each puts its own under
// `key`/RANK in the run's store and waits (at most the store's timeout) for
// the others'; the last rank to read them removes them. A single process (or
// no store) gets {value}. Ranks not heard from in time are an error naming
// them and `what` ("save_checkpoint's name"). A collective over the ranks
// that call it with the same key: use a new key for each call.
SKEIN_EXPORT std::vector<std::string> every_rank_value(const RunStore& store, const RunInfo& run, const std::string& key,
                                                       const std::string& value, const std::string& what);

}  // namespace skein::core
