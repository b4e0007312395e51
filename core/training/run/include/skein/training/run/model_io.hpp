#pragma once
// A model's weights in and out: the file a warm start reads (warm_start.hpp
// does the rest), and a trained model made again from its run directory for export and predict.
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "skein/training/config/config.hpp"
#include "skein/training/data/data_scaling.hpp"
#include "skein/training/data/input_scaling.hpp"
#include "skein/host/plugin_registry.hpp"
#include "skein/host/trained_model_options.hpp"
#include "skein/detail/export.hpp"
#include "skein/model.hpp"
#include "skein/run.hpp"

namespace skein::core {


// The model of a finished (or running) run, built from RUN_DIR/config.json
// with the weights of one of its checkpoints, in eval mode.
class SKEIN_EXPORT TrainedModel {
 public:
  explicit TrainedModel(const TrainedModelOptions& options);
  ~TrainedModel();

  Model& model() { return *model_; }
  const std::string& checkpoint_dir() const { return checkpoint_dir_; }
  const DataInfo& data_info() const { return info_; }

  // The device the model is on (TrainedModelOptions::device resolved).
  const torch::Device& device() const { return device_; }
  // Eval-mode outputs for `inputs` [N, ...] (raw unless the options said
  // otherwise), `batch_size` samples at a time on device(); the outputs on the CPU.
  torch::Tensor predict(const torch::Tensor& inputs, std::int64_t batch_size);
  // Bytes Python's torch.load reads as the state dict.
  std::string state_dict() const;
  // Bytes Python's torch.jit.load reads: the scripted module itself for a
  // torchscript model; for other models a trace of forward on a batch of
  // data_info()'s input shape (so it must not branch on its input's values).
  // Its tensors are on device(). It scales raw inputs as predict does (a
  // torchscript model is then the submodule `model` of a module that scales).
  std::string torchscript();
  // Bytes Python's torch.export.load reads: for a model trained from a .pt2
  // (skein::ExportedModel), that archive with the trained weights, scaling
  // raw inputs as predict does (nodes before the program's first). Throws
  // ConfigError for any other model.
  std::string pt2() const;
  // How the model's inputs are made from raw ones, for the JSON beside an
  // export: {"input_shape", "input_scaling": [steps in order, each
  // {"from", "divide_by", "mean", "std"}: x = (x / divide_by - mean) / std],
  // "input_scaling_in_model": whether torchscript() and pt2() do it}.
  nlohmann::json input_record(bool in_model) const;

 private:
  PluginRegistry registry_;
  RunConfig config_;
  DataInfo info_;
  std::optional<InputScale> data_scaling_;  // the dataset's own, applied first
  InputScaling scaling_;  // the run's "standardize", applied before the model
  bool scale_inputs_ = true;  // TrainedModelOptions::input_scaling
  std::string checkpoint_dir_;
  std::shared_ptr<Model> model_;
  torch::Device device_ = torch::kCPU;

  // Whether raw inputs are scaled before the model, and how.
  bool scales() const { return scale_inputs_ && (data_scaling_ || scaling_.active()); }
  torch::Tensor model_inputs(const torch::Tensor& raw) const;
};

}  // namespace skein::core
