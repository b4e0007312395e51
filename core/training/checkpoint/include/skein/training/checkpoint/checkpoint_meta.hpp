#pragma once
// trainer.json, the metadata file of a checkpoint (see trainer_checkpoint.cpp):
// parsed and checked here, apart from any torch state, so that resume can
// trust its shape and the parser can be fuzzed on its own.
#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "skein/detail/json.hpp"

#include "skein/detail/export.hpp"
#include "skein/run.hpp"
#include "skein/training/data/pass_segment.hpp"

namespace skein::core {

// The trainer.json layout this skein writes and reads.
inline constexpr int kCheckpointFormat = 1;

// The files of a checkpoint directory (checkpoint_writer.cpp says what each holds).
namespace checkpoint_files {
inline constexpr const char* kModel = "model.pt";
inline constexpr const char* kStateDict = "model_state_dict.pt";
inline constexpr const char* kOptimizer = "optimizer.pt";
inline constexpr const char* kHistory = "history.json";
inline constexpr const char* kRng = "rng.pt";
inline constexpr const char* kCudaRng = "rng_cuda.pt";  // runs on CUDA: each rank's device generator
inline constexpr const char* kParallel = "parallel.pt";
inline constexpr const char* kOpenEpochParts = "open_epoch.json";
inline constexpr const char* kOpenEpochBatches = "open_epoch.pt";
inline constexpr const char* kMeta = "trainer.json";  // written last: marks it complete
}  // namespace checkpoint_files

// The keys of trainer.json and open_epoch.json, each named once: the writer
// (checkpoint_meta_json, open_epoch_rank_json) and the readers
// (parse_checkpoint_meta, parse_open_epoch_ranks) use these.
namespace meta_key {
inline constexpr const char* kFormat = "format";
inline constexpr const char* kEpoch = "epoch";
inline constexpr const char* kLr = "lr";
inline constexpr const char* kWorldSize = "world_size";
inline constexpr const char* kSeed = "seed";
inline constexpr const char* kModel = "model";
inline constexpr const char* kDataInfo = "data_info";
inline constexpr const char* kInputShape = "input_shape";  // of data_info
inline constexpr const char* kNumClasses = "num_classes";  // of data_info
inline constexpr const char* kCallbacks = "callbacks";
inline constexpr const char* kPlugin = "plugin";  // of a callback's entry
inline constexpr const char* kState = "state";    // of a callback's entry
inline constexpr const char* kFiles = "files";
inline constexpr const char* kScript = "script";
inline constexpr const char* kPath = "path";      // of script
inline constexpr const char* kSha256 = "sha256";  // of script
inline constexpr const char* kInputScaling = "input_scaling";
inline constexpr const char* kDataScaling = "data_scaling";
inline constexpr const char* kLossScale = "loss_scale";
inline constexpr const char* kScale = "scale";                   // of loss_scale
inline constexpr const char* kGrowthTracker = "growth_tracker";  // of loss_scale
inline constexpr const char* kModelOnly = "model_only";
inline constexpr const char* kOpenEpoch = "open_epoch";
inline constexpr const char* kNextBatch = "next_batch";              // of open_epoch (and its "epoch")
inline constexpr const char* kTrainSamples = "train_samples";        // of open_epoch
inline constexpr const char* kBatchSize = "batch_size";              // of open_epoch
inline constexpr const char* kAccumulateSteps = "accumulate_steps";  // of open_epoch
inline constexpr const char* kPasses = "passes";                     // of open_epoch
inline constexpr const char* kBatches = "batches";                   // of a pass (and its "world_size")
// open_epoch.json: {"ranks": [{"record": ..., "callbacks": [...], "seconds": S}, ...]}
inline constexpr const char* kRanks = "ranks";
inline constexpr const char* kRecord = "record";
inline constexpr const char* kSeconds = "seconds";
}  // namespace meta_key

struct CheckpointMeta {
  struct CallbackState {
    std::string plugin;     // "" when the entry names none
    nlohmann::json state;   // null when the entry has none
  };
  long epoch = 0;          // >= 0
  int world_size = 1;      // the ranks that wrote it, >= 1
  // The run's seed and model plugin, for the reader's information (not
  // checked: 0 and "" when absent or of another type).
  std::uint64_t seed = 0;
  std::string model;
  std::vector<double> lr;  // one per optimizer parameter group (may be NaN/inf)
  std::vector<CallbackState> callbacks;
  // CRC-64 (crc64_hex) of every other file of the checkpoint, by file name;
  // empty in checkpoints written before checksums were recorded.
  std::vector<std::pair<std::string, std::string>> files;
  // The dataset's shape facts the model was built from (absent in older
  // checkpoints): export and predict make the model again without the data.
  std::optional<DataInfo> data_info;
  // The TorchScript file of a TorchScript model (script_pin.hpp); absent for
  // other models and in older checkpoints.
  struct Script {
    std::string path;
    std::string sha256;  // 64 hex digits
  };
  std::optional<Script> script;
  // "standardize": {"mean": [...], "std": [...]} (input_scaling.hpp), checked
  // against data_info where it is read; null when the run did not scale.
  nlohmann::json input_scaling;
  // The dataset's own scaling of its raw inputs (data_scaling.hpp), applied
  // before "input_scaling"; null when it declares none or in older checkpoints.
  nlohmann::json data_scaling;
  // A checkpoint written inside an epoch (the checkpoint callback's
  // every_n_steps): `epoch` epochs are complete, epoch + 1 continues at train
  // batch `next_batch`. Each rank's part of the open epoch is in
  // open_epoch.json and open_epoch.pt. The batching it was cut from is
  // recorded: a resume must batch alike to continue at the same sample.
  struct OpenEpoch {
    long epoch = 0;       // the open epoch (written; read back as CheckpointMeta::epoch + 1)
    long next_batch = 0;  // >= 1
    std::int64_t train_samples = 0;
    long batch_size = 0;
    long accumulate_steps = 0;
    // How the pass got there: its segments, the last on world_size ranks
    // (more than one after a resume on another world size); their
    // batches_done add up to next_batch.
    std::vector<PassSegment> passes;
  };
  std::optional<OpenEpoch> open_epoch;
  // precision 16-mixed's loss scale when the checkpoint was written
  // (loss_scaler.hpp); absent for other precisions and in older checkpoints.
  struct LossScale {
    double scale = 0;                // > 0, finite
    std::int64_t growth_tracker = 0; // good steps in a row, >= 0
  };
  std::optional<LossScale> loss_scale;
  // A run's final model ("model_only": true): model files and trainer.json,
  // no optimizer state, history or random state; never resumed from.
  bool model_only = false;
};

// One rank's part of an open epoch (open_epoch.json holds {"ranks": [...]}).
struct OpenEpochRank {
  nlohmann::json record;  // the epoch's values recorded so far (an object; no "batches")
  std::vector<CheckpointMeta::CallbackState> callbacks;  // this rank's callback states
  double seconds = 0;     // how long the epoch had run
};
// Every rank's part, checked: `world_size` entries (the checkpoint's world size).
SKEIN_EXPORT std::vector<OpenEpochRank> parse_open_epoch_ranks(const std::string& text, int world_size,
                                                               const std::string& where);

// trainer.json's content for `meta` (the writer dumps it with non-finite
// numbers encoded); parse_checkpoint_meta reads it back. Optional parts are
// written when present: data_info, script, the scalings when not null,
// loss_scale, open_epoch (its passes when not empty), model_only when true.
SKEIN_EXPORT nlohmann::json checkpoint_meta_json(const CheckpointMeta& meta);
// Callback states as trainer.json and open_epoch.json list them.
SKEIN_EXPORT nlohmann::json callback_states_json(const std::vector<CheckpointMeta::CallbackState>& states);
// One rank's entry of open_epoch.json, and the file's content for every rank's.
SKEIN_EXPORT nlohmann::json open_epoch_rank_json(const OpenEpochRank& rank);
SKEIN_EXPORT nlohmann::json open_epoch_ranks_json(nlohmann::json ranks);

// Parses the text of a trainer.json. `where` names the checkpoint in errors
// ("checkpoint DIR"). Throws ConfigError, and nothing else, when the text is
// not JSON, has another format, or a field has the wrong shape.
SKEIN_EXPORT CheckpointMeta parse_checkpoint_meta(const std::string& text, const std::string& where);

// Reads DIR/trainer.json and checks every file it lists against its
// checksum. Throws ConfigError naming the checkpoint or the damaged file.
SKEIN_EXPORT CheckpointMeta read_checked_checkpoint(const std::string& dir);

// The "epoch" of a parsed trainer.json: an integer in [0, LONG_MAX - 1]
// (resume continues with epoch + 1); nullopt for anything else.
SKEIN_EXPORT std::optional<long> checkpoint_epoch(const nlohmann::json& meta);

// Where a parsed trainer.json stands in training, for ordering checkpoints:
// (complete epochs, train batches of the open epoch done; 0 at an epoch's
// end); nullopt when checkpoint_epoch is.
SKEIN_EXPORT std::optional<std::pair<long, long>> checkpoint_position(const nlohmann::json& meta);

}  // namespace skein::core
