#pragma once
#include "skein/detail/export.hpp"
#include "skein/history.hpp"
#include "skein/run.hpp"

namespace skein {

// Base of every history plugin: how each epoch's batch records of all ranks
// come together in every rank's History.
class SKEIN_EXPORT HistoryBackend {
 public:
  virtual ~HistoryBackend();
  // Commits the pending batch records of the current epoch into `history`;
  // after it returns every rank holds the same batches.
  virtual void sync_epoch(History& history) = 0;
  // End of the run: release store keys, files, connections.
  virtual void close() {}
  // Whether every rank ends with the same history (checked at the end of a
  // distributed run only for backends that say so).
  virtual bool synchronizes_ranks() const { return false; }
};

}  // namespace skein
