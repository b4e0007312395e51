#pragma once
// The run a plugin is part of: where this process stands in it (RunInfo), what
// the data look like (DataInfo), and where a plugin may write its files.
// No torch here: cheap to include.
#include <cstdint>
#include <string>
#include <vector>

#include "skein/detail/export.hpp"

namespace skein {

// Facts about this process's place in the run, known before plugins are created.
// Ranks follow torchrun's environment variables (RANK, WORLD_SIZE, ...).
struct RunInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr;  // MASTER_ADDR, empty outside a distributed run
  int master_port = 0;      // MASTER_PORT
  bool multi_node = false;  // the run spans machines (ranks beyond LOCAL_WORLD_SIZE)
  std::string run_id;       // the same on every rank of one run
  double timeout_s = 300;   // bound of every store wait and collective
  std::uint64_t seed = 0;
  std::string run_dir;
  // API 3.2: the device this process trains on, as libtorch spells it ("cpu",
  // "cuda:0"): the config's "device" resolved (auto, LOCAL_RANK). The model,
  // the batches and the loss's inputs are there; a plugin that makes tensors
  // of its own puts them on torch::Device(run.device).
  std::string device = "cpu";
  bool is_main() const { return rank == 0; }
};

// What a dataset provides, handed to the model plugin so it can size itself.
struct DataInfo {
  std::vector<std::int64_t> input_shape;  // per sample, e.g. {1, 28, 28}
  // Classes of a classification task; for other tasks, the width of the
  // model output per sample (e.g. 1 for a single regression target).
  std::int64_t num_classes = 0;
};

// The config's top-level keys (what TrainContext::config() holds), named
// once: core's schema (types, defaults, limits, docs, what a resume may
// change) is built from these names, and whoever reads the config by key
// uses them, never the words again (scripts/check_option_names.py checks).
// API 3.7.
namespace run_key {
inline constexpr const char* kModel = "model";
inline constexpr const char* kData = "data";
inline constexpr const char* kDataInfo = "data_info";
inline constexpr const char* kHistory = "history";
inline constexpr const char* kParallel = "parallel";
inline constexpr const char* kCallbacks = "callbacks";
inline constexpr const char* kLoss = "loss";
inline constexpr const char* kOptimizer = "optimizer";
inline constexpr const char* kInitFrom = "init_from";
inline constexpr const char* kInitStrict = "init_strict";
inline constexpr const char* kBatchSize = "batch_size";
inline constexpr const char* kMaxEpochs = "max_epochs";
inline constexpr const char* kAccumulateSteps = "accumulate_steps";
inline constexpr const char* kPrecision = "precision";
inline constexpr const char* kDevice = "device";
inline constexpr const char* kSeed = "seed";
inline constexpr const char* kValidSplit = "valid_split";
inline constexpr const char* kStandardize = "standardize";
inline constexpr const char* kValidStratified = "valid_stratified";
inline constexpr const char* kDataWorkers = "data_workers";
inline constexpr const char* kCheckpointBackground = "checkpoint_background";
inline constexpr const char* kPluginVersions = "plugin_versions";
}  // namespace run_key

// The run's settings a plugin may need, validated, the config's defaults
// filled in (API 3.7: TrainContext::settings()). Plugins read them here,
// never from config() with a fallback of their own.
struct RunSettings {
  std::int64_t max_epochs = 0;        // epochs the run trains (the last epoch's number)
  std::int64_t batch_size = 0;        // samples per batch and process
  std::int64_t accumulate_steps = 0;  // batches per optimizer step
};

// Where plugins write: every file a run writes lives inside its run directory
// and is recorded there (in .skein-outputs), so that `--overwrite` removes
// exactly what skein wrote and nothing else. A path outside the run directory
// (absolute, "..", or through a symlink) is refused unless the user started
// skein with --allow-outside-run-dir (environment SKEIN_ALLOW_OUTSIDE_RUN_DIR=1),
// and the run's own files (config.json, history.json, ...) are never a
// plugin's to write.
class Options;

// The absolute path for option `key` of `options` (a file or directory name,
// relative to the run directory). Records it as an output of the run (rank 0
// only). Throws ConfigError naming the plugin and the option.
SKEIN_EXPORT std::string run_output_path(const Options& options, const std::string& key, const RunInfo& run);

// The same for a name the plugin chose itself; `what` names it in errors.
// A plugin that writes several files into a directory of its own records each
// of them this way, e.g. run_output_path(run, dir + "/" + file, ...).
SKEIN_EXPORT std::string run_output_path(const RunInfo& run, const std::string& name, const std::string& what);

// For option `key` naming a directory the plugin writes its files into (API
// 2.2): recorded as a container, which `--overwrite` removes only once empty,
// so that files a user put there stay. (run_output_path records the entry as
// a whole: a directory recorded that way goes with everything in it.)
SKEIN_EXPORT std::string run_output_dir(const Options& options, const std::string& key, const RunInfo& run);

// Whether `path` is (inside) an output this run recorded, in this process or
// in an earlier attempt on the same run directory (a restart, a resume).
SKEIN_EXPORT bool is_run_output(const RunInfo& run, const std::string& path);

// Whether the user allowed outputs outside the run directory.
SKEIN_EXPORT bool outside_run_dir_allowed();

// API 3.8: an optional base (found with dynamic_cast) of a history backend
// or callback that keeps a rank or a world size of its own: live recovery
// (skein::RegroupingParallel, skein/parallel.hpp) tells it of each change.
class SKEIN_EXPORT WorldChangeListener {
 public:
  virtual ~WorldChangeListener();
  // The run goes on as `run` (its rank and world size changed) in
  // membership `generation`; called on every member, before anything of the
  // new membership is synchronised.
  virtual void on_world_change(const RunInfo& run, std::int64_t generation) = 0;
};

}  // namespace skein
