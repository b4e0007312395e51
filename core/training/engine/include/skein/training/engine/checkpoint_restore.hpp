#pragma once
// Resuming from a checkpoint (checkpoint_writer.cpp says what one holds):
// the model, optimizer, random generator, wrapper state, history and callback
// states restored into a run's parts, each file checked to fit this run.
#include <optional>
#include <string>

#include "skein/training/checkpoint/checkpoint_meta.hpp"
#include "skein/training/config/config.hpp"
#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"
#include "skein/history.hpp"
#include "skein/run.hpp"
#include "skein/training/engine/run_parts.hpp"
#include "skein/training/data/training_data.hpp"

namespace skein::core {

// The epoch a checkpoint written inside an epoch left open, as it was then
// (on_epoch_begin had run: its effects are in the callbacks' states).
// On another world size, rank r carries on the records of the old ranks
// r, r + W, r + 2W, ... and the values and callback states of old rank
// r mod W_old; the rest of the epoch's samples are re-sharded: a new pass
// segment begins (pass_segment.hpp). On the same world size the segment
// the checkpoint was written in goes on, batch for batch.
struct OpenEpoch {
  long next_batch = 0;
  nlohmann::json record;             // the epoch's values so far
  std::vector<std::string> batches;  // BatchLog::to_bytes of each old rank's records this rank carries on
  double seconds = 0;                // time spent in it (the slowest rank's)
  std::vector<PassSegment> before;   // the pass segments before the one this run trains
  long segment_first_batch = 0;      // the epoch's train batch at which that one began
};

struct Restored {
  long epoch = 0;                 // the last complete epoch
  std::optional<OpenEpoch> open;  // a checkpoint written inside the next one
  int world_size_was = 0;         // the checkpoint's world size when this run's differs (else 0)
  std::string note;               // for train.log: what a change of world size reset ("" if none)
};

// Restores checkpoint `dir` into `parts` and `history`; a checkpoint that
// does not fit (model, batching, a model-only final, a step checkpoint
// beyond config.max_epochs) is a ConfigError naming the checkpoint and the
// file, and leaves `parts` and `history` as they were (all or nothing: a
// session lives on after a failed load; RestoreOptions). Not a collective: every rank reads
// its part. A checkpoint resumes on any world size (elastic): the
// replicated state is the same on every rank, each rank's random streams
// are seeded again from the seed, the position and its rank, per-rank
// wrapper state starts afresh, and an open epoch's untrained samples are
// re-sharded over the new ranks (OpenEpoch).
struct RestoreOptions {
  // Keep what the load replaces until it succeeds (a copy of the optimizer
  // state among it). A process that ends when the load fails (skein train
  // --resume) has no use for it.
  bool undo_on_failure = true;
  // Live recovery's hand-over of a leader's state (CheckpointParts::alone):
  // every rank's random streams seeded again from the seed, the position and
  // its rank, per-rank wrapper state afresh, on any world size.
  bool live = false;
};
SKEIN_EXPORT Restored restore_checkpoint(const std::string& dir, RunParts& parts, History& history,
                                         const RunConfig& config, const RunInfo& run,
                                         const RestoreOptions& options = {});
// ... with DIR's trainer.json as read_checked_checkpoint(dir) gave it, for a
// caller that looked at it first (trainer.json is then read once).
SKEIN_EXPORT Restored restore_checkpoint(const std::string& dir, const CheckpointMeta& meta, RunParts& parts,
                                         History& history, const RunConfig& config, const RunInfo& run,
                                         const RestoreOptions& options = {});

}  // namespace skein::core
