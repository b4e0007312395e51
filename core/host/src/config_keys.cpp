// The config's top-level keys, their defaults and limits, and what a resume
// may change: torch-free (libskein_host), so that `skein train --help` lists
// them without loading libtorch.
#include "skein/host/config_keys.hpp"

#include <stdexcept>

namespace skein::core {

namespace {

// Whether `skein train --resume` may change a key: results so far came from
// the model, data, loss, optimizer and their settings, and changing those
// would make the resumed run something else. The device may change: a
// checkpoint loads onto any (a GPU run resumed on the CPU).
constexpr bool kResumable = true;
constexpr bool kFixed = false;

constexpr OptionRange kPositive{"(0, )"};

}  // namespace

const std::vector<TopLevelKey>& top_level_keys() {
  using namespace run_key;
  static const std::vector<TopLevelKey> keys = {
      {option_spec(kModel, OptionType::object, nullptr, "Model plugin and its options: {\"plugin\": NAME, ...}"),
       kFixed},
      {option_spec(kData, OptionType::object, "null",
                   "Dataset plugin and its options (required by skein train; a session may be fed by its program "
                   "instead)"),
       kFixed},
      {option_spec(kDataInfo, OptionType::object, "null",
                   "Without data (a session): {\"input_shape\": [per-sample dims], \"num_classes\": classes or "
                   "output width}"),
       kFixed},
      {option_spec(kHistory, OptionType::object, R"({"plugin": "local"})", "History backend plugin"), kResumable},
      {option_spec(kParallel, OptionType::object, R"({"plugin": "none"})", "Parallel wrapper plugin"), kResumable},
      {option_spec(kCallbacks, OptionType::list, R"([{"plugin": "print_log"}])", "Callback plugins, in order"),
       kResumable},
      {option_spec(kLoss, OptionType::object, R"({"plugin": "cross_entropy"})", "Loss plugin and its options"),
       kFixed},
      {option_spec(kOptimizer, OptionType::object, R"({"plugin": "sgd"})", "Optimizer plugin and its options"),
       kFixed},
      {option_spec(kInitFrom, OptionType::string, R"("")",
                   "Warm start: a state dict file (torch.save(model.state_dict()), or a dict holding one under "
                   "model_state_dict, state_dict or model), a TorchScript file, or a skein checkpoint or run "
                   "directory"),
       kFixed},
      {option_spec(kInitStrict, OptionType::boolean, "true",
                   "init_from: every entry of the model and the file must match (false: load those that fit, list "
                   "the rest)"),
       kFixed},
      {option_spec(kBatchSize, OptionType::integer, "64", "Samples per batch and process", kPositive), kFixed},
      {option_spec(kMaxEpochs, OptionType::integer, "10", "Epochs to train", kPositive), kResumable},
      {option_spec(kAccumulateSteps, OptionType::integer, "1", "Batches per optimizer step (gradient accumulation)",
                   kPositive),
       kFixed},
      {option_spec(kPrecision, OptionType::choice, R"("32")",
                   "32; bf16-mixed: forward and loss under autocast to bfloat16 (CPU or CUDA); 16-mixed (CUDA): "
                   "autocast to float16 with dynamic loss scaling. Parameters, gradients and optimizer state stay "
                   "float32",
                   OptionChoices{"32|bf16-mixed|16-mixed"}),
       kFixed},
      {option_spec(kDevice, OptionType::string, R"("auto")",
                   "auto (CUDA when libtorch has it and a device is visible, else the CPU), cpu, cuda (the device of "
                   "the process's LOCAL_RANK) or cuda:N"),
       kResumable},
      {option_spec(kSeed, OptionType::integer, "0", "Seed of every random choice", OptionRange{"[0, )"}), kFixed},
      {option_spec(kValidSplit, OptionType::number, "0.1",
                   "Fraction of train held out for validation (unless the dataset names validation files)",
                   OptionRange{"[0, 1)"}),
       kFixed},
      {option_spec(kStandardize, OptionType::boolean, "false",
                   "Scale each input feature to mean 0, std 1 by the training split's statistics (kept for predict "
                   "and export)"),
       kFixed},
      {option_spec(kValidStratified, OptionType::boolean, "false",
                   "valid_split per class: each class keeps its share in both parts (class ids in memory)"),
       kFixed},
      {option_spec(kDataWorkers, OptionType::integer, "1",
                   "Threads that fetch batches of a streaming dataset ahead of training (0: on the training thread)",
                   OptionRange{"[0, 64]"}),
       kResumable},
      {option_spec(kCheckpointBackground, OptionType::boolean, "false",
                   "Write checkpoints on a thread of their own: training stalls only while the model and optimizer "
                   "are copied to memory (at most one write in flight; the next waits for it)"),
       kResumable},
      {option_spec(kPluginVersions, OptionType::object, "{}", "Written by skein into config.json; ignored"),
       kResumable},
  };
  return keys;
}

const std::vector<OptionSpec>& top_level_schema() {
  static const std::vector<OptionSpec> schema = [] {
    std::vector<OptionSpec> specs;
    for (const auto& key : top_level_keys()) specs.push_back(key.spec);
    return specs;
  }();
  return schema;
}

nlohmann::json schema_default(const std::string& key) {
  for (const auto& spec : top_level_schema())
    if (key == spec.name && spec.default_json) return nlohmann::json::parse(spec.default_json);
  throw std::logic_error("config key '" + key + "' has no default");
}

std::vector<std::string> keys_changeable_on_resume() {
  std::vector<std::string> names;
  for (const auto& key : top_level_keys())
    if (key.resume_may_change) names.emplace_back(key.spec.name);
  return names;
}

namespace {

// The run settings, each by its key and its RunSettings field: the one list of them.
struct Setting {
  const char* key;
  std::int64_t RunSettings::*field;
};
constexpr Setting kSettings[] = {{run_key::kMaxEpochs, &RunSettings::max_epochs},
                                 {run_key::kBatchSize, &RunSettings::batch_size},
                                 {run_key::kAccumulateSteps, &RunSettings::accumulate_steps}};

}  // namespace

RunSettings run_settings_of(const nlohmann::json& config) {
  RunSettings settings;
  for (const auto& s : kSettings) {
    const auto given = config.is_object() ? config.find(s.key) : config.end();
    settings.*s.field = (given == config.end() || given->is_null() ? schema_default(s.key) : *given).get<std::int64_t>();
  }
  return settings;
}

void put_run_settings(nlohmann::json& config, const RunSettings& settings) {
  for (const auto& s : kSettings) config[s.key] = settings.*s.field;
}

}  // namespace skein::core
