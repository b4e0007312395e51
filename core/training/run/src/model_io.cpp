#include "skein/training/run/model_io.hpp"

#include "skein/training/device/device.hpp"
#include "skein/training/run/run_dir.hpp"

#include <cctype>
#include <regex>
#include <sstream>

#include <boost/filesystem.hpp>
#include <torch/csrc/jit/frontend/tracer.h>

#include "skein/training/checkpoint/checkpoint_dir.hpp"
#include "skein/training/checkpoint/checkpoint_meta.hpp"
#include "skein/training/run/train_run.hpp"
#include "skein/training/checkpoint/script_pin.hpp"
#include "skein/training/checkpoint/state_dict_io.hpp"
#include "skein/training/engine/trainer.hpp"
#include "skein/dataset.hpp"
#include "skein/errors.hpp"
#include "skein/io/input_file.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/run.hpp"
#include "skein/io/exported_model.hpp"
#include "skein/io/scripted_model.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

namespace {

// RUN_DIR/checkpoints/NAME, with NAME a plain directory name (no path).
std::string named_checkpoint(const std::string& run_dir, const std::string& name) {
  static const std::regex plain("[A-Za-z0-9_][A-Za-z0-9_.-]*");
  if (!std::regex_match(name, plain))
    throw ConfigError("--checkpoint '" + name + "': expected a checkpoint name such as best or epoch_0003");
  const std::string dir = run_dir + "/checkpoints/" + name;
  if (!fs::exists(dir + "/" + checkpoint_files::kMeta))
    throw ConfigError("--checkpoint '" + name + "': no complete checkpoint " + dir);
  return dir;
}

// Mirrors the parameters and buffers of `from` (the same tensors) into a
// scripted module of the same nesting, so that a trace reads them as the
// module's attributes instead of baking them in as constants.
void mirror_into_script(torch::nn::Module& from, torch::jit::Module& into) {
  into.register_attribute("training", c10::BoolType::get(), false);
  for (const auto& p : from.named_parameters(/*recurse=*/false)) into.register_parameter(p.key(), p.value(), false);
  for (const auto& b : from.named_buffers(/*recurse=*/false)) into.register_buffer(b.key(), b.value());
  for (const auto& c : from.named_children()) {
    // A class name is an identifier: a child named "0" (a Sequential's, or a
    // TorchScript model's mirrored submodule) gets a letter first.
    std::string type = c.value()->name().substr(c.value()->name().rfind(':') + 1);
    if (type.empty() || std::isdigit(static_cast<unsigned char>(type[0]))) type = "m" + type;
    torch::jit::Module child("__torch__.skein.export." + type + "_" + c.key());
    mirror_into_script(*c.value(), child);
    into.register_module(c.key(), child);
  }
}

// A module that scales raw inputs as `data` (the dataset's, if any) and then
// `standardize` (if active) do, and calls `model` on them: the trained module
// stays whole (control flow, methods) as the submodule `model`; the scaling's
// constants are buffers beside it, on `device`.
torch::jit::Module scaling_script(const torch::jit::Module& model, const std::optional<InputScale>& data,
                                  const InputScaling& standardize, const std::vector<std::int64_t>& sample_shape,
                                  const torch::Device& device) {
  torch::jit::Module outer("__torch__.skein.export.ScaledInputs");
  outer.register_attribute("training", c10::BoolType::get(), false);
  outer.register_module("model", model);
  const auto dims = static_cast<std::int64_t>(sample_shape.size());
  const InputScale scale = data.value_or(InputScale{});
  outer.register_attribute("divide_by", c10::FloatType::get(), scale.divide_by);
  outer.register_buffer("data_mean", data_scaling_mean(scale, dims).to(device));
  outer.register_buffer("data_std", data_scaling_std(scale, dims).to(device));
  const auto ones = torch::ones(sample_shape, torch::TensorOptions().device(device));
  outer.register_buffer("standardize_mean", standardize.active() ? standardize.mean : ones - 1);
  outer.register_buffer("standardize_std", standardize.active() ? standardize.std : ones);
  outer.define(R"(
def forward(self, x):
    x = (x / self.divide_by - self.data_mean) / self.data_std
    return self.model.forward((x - self.standardize_mean) / self.standardize_std)
)");
  return outer;
}

}  // namespace

TrainedModel::TrainedModel(const TrainedModelOptions& options) {
  const std::string& run_dir = options.run_dir;
  recover_run_dir(run_dir);
  if (!fs::exists(fs::path(run_dir) / run_files::kConfig))
    throw ConfigError("'" + run_dir + "' is not a run directory (no config.json)");
  checkpoint_dir_ = options.checkpoint.empty() ? find_model_checkpoint(run_files::path(run_dir, run_files::kCheckpoints))
                                               : named_checkpoint(run_dir, options.checkpoint);
  if (checkpoint_dir_.empty())
    throw ConfigError("'" + run_dir + "' has no model yet: no epoch of it completed, and it has no checkpoint");
  const CheckpointMeta meta = read_checked_checkpoint(checkpoint_dir_);

  scan_plugins(registry_, options.plugin_dirs);
  ConfigSources sources;
  sources.config_path = run_files::path(run_dir, run_files::kConfig);
  // Only the model (and, for old checkpoints, the dataset) is made: the
  // run's callbacks and backends need not be installed where it is exported.
  sources.sets = {std::string(run_key::kCallbacks) + "=[]"};
  sources.data_required = false;  // a session's run has data_info instead
  for (const char* key : {run_key::kHistory, run_key::kParallel})
    sources.sets.push_back(std::string(key) + "=" + schema_default(key).dump());
  config_ = resolve_config(sources, registry_);
  RunInfo run;
  run.seed = config_.seed;
  if (meta.data_info) {
    info_ = *meta.data_info;
  } else if (config_.data.record) {  // checkpoints written before data_info was recorded: ask the dataset
    const Options data_opts = config_.data.make_options();
    info_ = registry_.create<Dataset>(*config_.data.record, PluginArgs{data_opts, run, nullptr, nullptr})->info();
  } else {
    info_ = config_.data_info;
  }
  const Options model_opts = config_.model.make_options();
  model_ = registry_.create<Model>(*config_.model.record, PluginArgs{model_opts, run, &info_, nullptr});
  check_script_unchanged(*model_, meta, "checkpoint " + checkpoint_dir_);
  try {
    if (!meta.input_scaling.is_null())
      scaling_ = InputScaling::from_json(meta.input_scaling, info_.input_shape, "checkpoint " + checkpoint_dir_);
    if (!meta.data_scaling.is_null())
      data_scaling_ = data_scaling_from_json(meta.data_scaling, info_, "checkpoint " + checkpoint_dir_);
  } catch (const std::runtime_error& e) {
    throw ConfigError(e.what());
  }
  scale_inputs_ = options.input_scaling;
  const std::string file = checkpoint_dir_ + "/" + checkpoint_files::kStateDict;
  load_state_dict(*model_, read_state_dict(file), "checkpoint " + file);
  device_ = choose_device(options.device, RunInfo{}, device_flag_of_a_command()).device;
  model_->to(device_);
  scaling_ = scaling_.on(device_);
  model_->eval();
}

TrainedModel::~TrainedModel() = default;

torch::Tensor TrainedModel::predict(const torch::Tensor& inputs, std::int64_t batch_size) {
  if (inputs.dim() == 0) throw ConfigError("the inputs are a scalar; expected a batch [N, ...]");
  const auto expected = info_.input_shape;
  const auto per_sample = inputs.sizes().slice(1).vec();
  if (!expected.empty() && per_sample != expected) {
    std::ostringstream s;
    s << "the inputs have shape " << inputs.sizes() << "; the model takes samples of shape "
      << c10::IntArrayRef(expected) << " (inputs [N, " << c10::IntArrayRef(expected) << "])";
    throw ConfigError(s.str());
  }
  torch::NoGradGuard no_grad;
  model_->eval();
  auto params = model_->parameters();
  const auto dtype = params.empty() ? torch::kFloat : params.front().scalar_type();
  std::vector<torch::Tensor> outputs;
  for (std::int64_t lo = 0; lo < inputs.size(0); lo += batch_size) {
    const auto batch = inputs.slice(0, lo, std::min(inputs.size(0), lo + batch_size)).to(device_, dtype);
    outputs.push_back(model_->forward(model_inputs(batch)).cpu());
  }
  if (outputs.empty()) return torch::empty({0});
  return torch::cat(outputs);
}

std::string TrainedModel::state_dict() const { return state_dict_bytes(*model_); }

std::string TrainedModel::torchscript() {
  model_->eval();
  std::ostringstream out;
  if (auto* scripted = dynamic_cast<ScriptedModel*>(model_.get())) {
    if (scales())
      scaling_script(scripted->script(), data_scaling_, scaling_, info_.input_shape, device_).save(out);
    else
      scripted->script().save(out);
    return out.str();
  }
  // libtorch cannot script a C++ module, but it can trace one: the module's
  // tensors become attributes of a new scripted module, and forward is
  // recorded on an example batch, with the input scaling (constants of the
  // graph) when the dataset scaled its inputs or the run standardized them.
  torch::jit::Module module("__torch__.skein.export." + config_.model.record->name);
  mirror_into_script(*model_, module);
  std::vector<std::int64_t> shape{2};
  shape.insert(shape.end(), info_.input_shape.begin(), info_.input_shape.end());
  const torch::Tensor example = torch::zeros(shape, torch::TensorOptions().device(device_));
  try {
    torch::NoGradGuard no_grad;
    auto traced = torch::jit::tracer::trace(
        {example},
        [&](torch::jit::Stack inputs) -> torch::jit::Stack {
          return {model_->forward(model_inputs(inputs.at(0).toTensor()))};
        },
        [](const torch::autograd::Variable&) { return std::string(); }, /*strict=*/false,
        /*force_outplace=*/false, &module);
    auto graph = std::get<0>(traced)->graph;
    auto fn = module._ivalue()->compilation_unit()->create_function(
        c10::QualifiedName(*module.type()->name(), "forward"), graph);
    module.type()->addMethod(fn);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot trace model '" + config_.model.record->name + "' to TorchScript: " +
                             first_line(e.what()) + "; export --format state_dict instead");
  }
  module.save(out);
  return out.str();
}

std::string TrainedModel::pt2() const {
  const auto* exported = dynamic_cast<const ExportedModel*>(model_.get());
  if (!exported)
    throw ConfigError("--format pt2: model '" + config_.model.record->name +
                      "' was not trained from a .pt2 (the pt2 model); export it as torchscript or state_dict");
  std::vector<ExportedModel::InputStep> steps;
  if (scales()) {
    const auto dims = static_cast<std::int64_t>(info_.input_shape.size());
    if (data_scaling_)
      steps.push_back({data_scaling_->divide_by, data_scaling_mean(*data_scaling_, dims), data_scaling_std(*data_scaling_, dims)});
    if (scaling_.active()) steps.push_back({1, scaling_.mean, scaling_.std});
  }
  return exported->archive_with_current_weights(steps);
}

torch::Tensor TrainedModel::model_inputs(const torch::Tensor& raw) const {
  if (!scale_inputs_) return raw;
  return scaling_.apply(data_scaling_ ? apply_data_scaling(*data_scaling_, raw) : raw);
}

nlohmann::json TrainedModel::input_record(bool in_model) const {
  nlohmann::json steps = nlohmann::json::array();
  if (data_scaling_) {
    steps.push_back(data_scaling_json(*data_scaling_));
    steps.back()["from"] = config_.data.record ? "dataset '" + config_.data.record->name + "'" : "dataset";
  }
  if (scaling_.active()) {
    steps.push_back(scaling_.to_json());
    steps.back()["divide_by"] = 1;
    steps.back()["from"] = run_key::kStandardize;
  }
  return {{"input_shape", info_.input_shape},
          {"input_scaling", steps},
          {"input_scaling_in_model", in_model && scales()}};
}

}  // namespace skein::core
