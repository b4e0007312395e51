#pragma once
// Writing checkpoints (the format: checkpoint_writer.cpp's head): the files
// every rank contributes to, gathered on rank 0 through the run's store, a
// directory written beside its place and renamed into it; and the
// checkpoints callbacks ask for, written together once all ranks agree.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "skein/training/checkpoint/checkpoint_meta.hpp"
#include "skein/training/config/config.hpp"
#include "skein/detail/export.hpp"
#include "skein/history.hpp"
#include "skein/run.hpp"
#include "skein/run_store.hpp"
#include "skein/training/data/pass_segment.hpp"
#include "skein/training/engine/background_writes.hpp"
#include "skein/training/engine/run_parts.hpp"

namespace skein::core {

// Where the run is when a checkpoint is written.
struct EpochPosition {
  long epoch = 0;         // the last epoch begun
  bool open = false;      // inside it (begun, not ended)
  long next_batch = 0;    // inside it: its next train batch
  double seconds = 0;     // inside it: time spent in it so far
  std::vector<PassSegment> passes;  // inside it: how its pass got to next_batch (pass_segment.hpp)
};

// What a checkpoint holds: everything to resume, or only the model (final).
struct CheckpointParts {
  bool model_only = false;  // model files and trainer.json, rank 0 alone
  long epoch = -1;          // the epoch it is recorded as; -1: the current one
  // Written by rank 0 alone, not a collective: each rank's part is rank 0's
  // (open-epoch records: none of the others'). Live recovery hands a new
  // membership the state of its leader this way (live_recovery.hpp).
  bool alone = false;
  // With `alone` under a sharded optimizer: the whole optimizer to write
  // (live recovery gathers it from the members' shards), not this rank's.
  const torch::optim::Optimizer* whole_optimizer = nullptr;
};

class SKEIN_EXPORT CheckpointWriter {
 public:
  CheckpointWriter(RunParts& parts, const History& history, const RunConfig& config, const RunInfo& run,
                   const RunStore* store)
      : parts_(parts), history_(history), config_(config), run_(run), store_(store) {}

  // <run_dir>/checkpoints, where callbacks' checkpoints go.
  std::string root() const;
  // Writes root_dir/name at once (after a write in the background, if
  // any). A collective unless parts.model_only: every rank takes part,
  // rank 0 writes.
  void write(const std::string& root_dir, const std::string& name, const EpochPosition& at,
             const CheckpointParts& parts = {});
  // The same, written on rank 0 in the background when the config's
  // checkpoint_background is on (a session's save_checkpoint); returns
  // once every rank's part is taken. Without it: write() and a barrier.
  void save(const std::string& root_dir, const std::string& name, const EpochPosition& at);
  // Waits for a checkpoint being written in the background and throws its
  // failure (before a resume, at the end of training).
  void finish_writes() { background_.finish(); }

  // A checkpoint a callback asks for (TrainContext::request_checkpoint); a
  // name that is not one directory name is a ConfigError.
  void request(const std::string& name, const std::vector<std::string>& remove_after);
  bool requested() const { return !requests_.empty(); }
  // Writes the requested checkpoints under root() (the first written, the
  // others hard links to it), removes what they replace, and waits for every
  // rank. A collective: ranks that asked for different ones fail here. With
  // checkpoint_background, rank 0 takes copies and writes, links and
  // removes on another thread (background_writes.hpp): every rank returns
  // once its part is taken; a write still in flight is waited for first.
  void write_requested(const EpochPosition& at);
  // How long each write_requested held this rank, in seconds, in order.
  const std::vector<double>& stalls() const { return stalls_; }

 private:
  struct Request {
    std::string name;
    std::vector<std::string> remove_after;
  };
  void check_ranks_agree(long epoch) const;
  // The store key of rank `rank`'s `part` of checkpoint `name`.
  std::string part_key(const std::string& name, long epoch, const std::string& part, int rank) const;
  // Rank `rank`'s `part`, taken out of the store (rank 0).
  std::vector<std::uint8_t> take_part(const std::string& name, long epoch, const std::string& part, int rank) const;
  // Every rank's `mine`, gathered on rank 0 (empty elsewhere).
  // `alone`: rank 0's alone, as every rank's (CheckpointParts::alone).
  std::vector<std::string> gather_on_main(const std::string& name, long epoch, const std::string& part,
                                          std::string mine, bool alone) const;
  // A sharded optimizer's shard of a rank other than 0, streamed to rank 0
  // through the store as write_optimizer reads it.
  void send_optimizer_shard(const std::string& name, long epoch) const;
  // optimizer.pt on rank 0; other ranks' shards pass through files in `tmp`.
  void write_optimizer(const std::string& name, long epoch, const std::string& tmp, std::ostream& out,
                       const CheckpointParts& parts) const;
  CheckpointMeta meta(const std::vector<std::pair<std::string, std::string>>& checksums, const EpochPosition& at) const;
  // Every rank's parts of a checkpoint, gathered on rank 0 (write()).
  struct RankParts;
  // What rank 0 writes of a checkpoint: its files' contents (over the run's
  // own tensors, or copies of them to write in the background).
  struct Content;
  // Takes every rank's part of checkpoint root_dir/name (a collective
  // unless model_only). On rank 0, returns what writes and installs it
  // (any thread), over copies with `copies`; an empty function elsewhere.
  std::function<void()> prepare(const std::string& root_dir, const std::string& name, const EpochPosition& at,
                                const CheckpointParts& parts, bool copies);
  // Writes `c` into the new directory `tmp_dir` (any thread), trainer.json
  // last: what marks it complete.
  static void write_files(const std::string& tmp_dir, const Content& c);
  // Runs rank 0's `written` (empty elsewhere) at once, or on the
  // background thread; at once, every rank then meets at a barrier.
  void finish_write(std::function<void()> written, bool background);
  std::shared_ptr<Content> content(const std::string& name, const EpochPosition& at, const CheckpointParts& parts,
                                   const RankParts& ranks, const std::string& tmp_dir, bool copies);
  // The optimizer optimizer.pt holds: the running one, or a sharded one
  // consolidated from every rank's shard (`tmp`: where they pass through).
  const torch::optim::Optimizer& optimizer_to_save(const std::string& name, long epoch, const std::string& tmp,
                                                   const CheckpointParts& parts,
                                                   std::unique_ptr<torch::optim::Optimizer>& whole) const;
  nlohmann::json open_epoch_part(const EpochPosition& at) const;
  // The same state under another name: hard links to the files of `from`
  // (never modified once written), renamed into place. Rank 0 only; any thread.
  void link(const std::string& from, const std::string& name) const;

  RunParts& parts_;
  const History& history_;
  const RunConfig& config_;
  const RunInfo& run_;
  const RunStore* store_;
  std::vector<Request> requests_;
  bool names_checked_ = false;  // check_names_storable passed once
  std::vector<double> stalls_;
  BackgroundWrites background_;  // last: its destructor waits for the write in flight
};

}  // namespace skein::core
