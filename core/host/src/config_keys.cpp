// The config's top-level keys and their defaults: torch-free (libskein_host),
// so that `skein train --help` lists them without loading libtorch.
#include "skein/host/config_keys.hpp"

namespace skein::core {

const std::vector<OptionSpec>& top_level_schema() {
  static const std::vector<OptionSpec> schema = {
      {"model", OptionType::object, nullptr, "Model plugin and its options: {\"plugin\": NAME, ...}"},
      {"data", OptionType::object, "null",
       "Dataset plugin and its options (required by skein train; a session may be fed by its program instead)"},
      {"data_info", OptionType::object, "null",
       "Without data (a session): {\"input_shape\": [per-sample dims], \"num_classes\": classes or output width}"},
      {"history", OptionType::object, R"({"plugin": "local"})", "History backend plugin"},
      {"parallel", OptionType::object, R"({"plugin": "none"})", "Parallel wrapper plugin"},
      {"callbacks", OptionType::list, R"([{"plugin": "print_log"}])", "Callback plugins, in order"},
      {"loss", OptionType::object, R"({"plugin": "cross_entropy"})", "Loss plugin and its options"},
      {"optimizer", OptionType::object, R"({"plugin": "sgd"})", "Optimizer plugin and its options"},
      {"init_from", OptionType::string, R"("")",
       "Warm start: a state dict file (torch.save(model.state_dict()), or a dict holding one under model_state_dict, "
       "state_dict or model), a TorchScript file, or a skein checkpoint or run directory"},
      {"init_strict", OptionType::boolean, "true",
       "init_from: every entry of the model and the file must match (false: load those that fit, list the rest)"},
      {"batch_size", OptionType::integer, "64", "Samples per batch and process"},
      {"max_epochs", OptionType::integer, "10", "Epochs to train"},
      {"accumulate_steps", OptionType::integer, "1", "Batches per optimizer step (gradient accumulation)"},
      {"precision", OptionType::choice, R"("32")",
       "32; bf16-mixed: forward and loss under autocast to bfloat16 (CPU or CUDA); 16-mixed (CUDA): autocast to "
       "float16 with dynamic loss scaling. Parameters, gradients and optimizer state stay float32",
       "32|bf16-mixed|16-mixed"},
      {"device", OptionType::string, R"("auto")",
       "auto (CUDA when libtorch has it and a device is visible, else the CPU), cpu, cuda (the device of the "
       "process's LOCAL_RANK) or cuda:N"},
      {"seed", OptionType::integer, "0", "Seed of every random choice"},
      {"valid_split", OptionType::number, "0.1",
       "Fraction of train held out for validation (unless the dataset names validation files)"},
      {"standardize", OptionType::boolean, "false",
       "Scale each input feature to mean 0, std 1 by the training split's statistics (kept for predict and export)"},
      {"valid_stratified", OptionType::boolean, "false",
       "valid_split per class: each class keeps its share in both parts (class ids in memory)"},
      {"data_workers", OptionType::integer, "1",
       "Threads that fetch batches of a streaming dataset ahead of training (0: on the training thread)"},
      {"plugin_versions", OptionType::object, "{}", "Written by skein into config.json; ignored"},
  };
  return schema;
}

nlohmann::json schema_default(const std::string& key) {
  for (const auto& spec : top_level_schema())
    if (key == spec.name && spec.default_json) return nlohmann::json::parse(spec.default_json);
  throw std::logic_error("config key '" + key + "' has no default");
}

}  // namespace skein::core
