#pragma once
// The run configuration: a JSON file, then --plugin flags, then --set
// overrides, validated against the top-level schema and every plugin's schema.
#include <cstdint>
#include <string>
#include <vector>

#include "skein/detail/json.hpp"

#include "skein/host/config_keys.hpp"
#include "skein/host/plugin_registry.hpp"
#include "skein/host/train_request.hpp"
#include "skein/host/config_error.hpp"
#include "skein/options.hpp"
#include "skein/training/device/mixed_precision.hpp"
#include "skein/run.hpp"

namespace skein::core {
// One activated plugin with its validated options.
struct PluginUse {
  const PluginRecord* record = nullptr;
  nlohmann::json options;  // validated, defaults filled
  std::string where;       // config location as messages say it, e.g. "model" or "callbacks[1]"
  std::string path;        // the same as a dotted path: "model", "callbacks.1"
  SKEIN_EXPORT Options make_options() const;
};

// A resolved run config. Its defaults are the schema's (schema_default), so
// that a RunConfig made without a config file (a session, a test) holds the
// values a config that says nothing would give.
struct RunConfig {
  nlohmann::json resolved;  // what goes to <run_dir>/config.json
  std::int64_t batch_size = schema_default(run_key::kBatchSize).get<std::int64_t>();
  std::int64_t max_epochs = schema_default(run_key::kMaxEpochs).get<std::int64_t>();
  std::int64_t accumulate_steps = schema_default(run_key::kAccumulateSteps).get<std::int64_t>();
  Precision precision = precision_of(schema_default(run_key::kPrecision).get<std::string>());
  std::string device = schema_default(run_key::kDevice).get<std::string>();  // as written; device.hpp resolves it
  std::uint64_t seed = schema_default(run_key::kSeed).get<std::uint64_t>();
  double valid_split = schema_default(run_key::kValidSplit).get<double>();
  bool valid_stratified = schema_default(run_key::kValidStratified).get<bool>();  // valid_split per class
  bool standardize = schema_default(run_key::kStandardize).get<bool>();  // inputs scaled by the training split's mean and std
  std::int64_t data_workers = schema_default(run_key::kDataWorkers).get<std::int64_t>();  // prefetch threads (streaming)
  // checkpoints written on a thread of their own (background_writes.hpp)
  bool checkpoint_background = schema_default(run_key::kCheckpointBackground).get<bool>();
  // warm start: state dict file or checkpoint directory ("" for none)
  std::string init_from = schema_default(run_key::kInitFrom).get<std::string>();
  bool init_strict = schema_default(run_key::kInitStrict).get<bool>();  // warm start: every entry must match
  PluginUse model, data, history, parallel, loss, optimizer;  // data.record is null without data (a session)
  DataInfo data_info;  // without data: the config's data_info
  std::vector<PluginUse> callbacks;
  // Config paths ("optimizer.lr", "callbacks.1") whose values came from the
  // command line, each with the flag that set it: errors blame that flag.
  std::vector<std::pair<std::string, std::string>> from_command_line;
  std::string config_path;
  // Set when ddp was chosen because the run has several processes and the
  // config names no parallel plugin: a line for the log.
  std::string parallel_chosen;
};

// The message of `error` (about a config value) prefixed with where that
// value came from: the --set/--plugin flag that set it (found by the
// ConfigPathError's path), else the config file.
SKEIN_EXPORT std::string blame(const ConfigError& error, const RunConfig& config);

// Parses a JSON config file; errors name the file (and line/column).
SKEIN_EXPORT nlohmann::json read_config_file(const std::string& path);
// Applies one dotted.key=VALUE (VALUE is JSON, or else a plain string).
SKEIN_EXPORT void apply_set(nlohmann::json& config, const std::string& assignment);
// Applies one --plugin spec (loading the file when it names one); returns the
// config path it set ("model", "callbacks.2").
SKEIN_EXPORT std::string apply_plugin_flag(nlohmann::json& config, const std::string& spec, PluginRegistry& registry,
                       std::vector<std::string>& single_slots_taken);
// Reads, merges and validates everything. Throws ConfigError / PluginError.
SKEIN_EXPORT RunConfig resolve_config(const ConfigSources& sources, PluginRegistry& registry);

}  // namespace skein::core
