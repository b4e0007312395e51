#pragma once
// A model's weights in and out: the file a warm start reads (warm_start.hpp
// does the rest), and a trained model made again from its run directory for export and predict.
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "skein/training/config.hpp"
#include "skein/training/input_scaling.hpp"
#include "skein/host/plugin_registry.hpp"
#include "skein/host/trained_model_options.hpp"
#include "skein/detail/export.hpp"
#include "skein/model.hpp"
#include "skein/run.hpp"

namespace skein::core {

// The state dict file `source` names: the file itself, a checkpoint
// directory's model_state_dict.pt, or that of a run directory's newest
// checkpoint. Throws ConfigError naming `source`.
SKEIN_EXPORT std::string state_dict_file_of(const std::string& source);


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
  // Eval-mode outputs for `inputs` [N, ...], `batch_size` samples at a time
  // on device(); the outputs on the CPU.
  torch::Tensor predict(const torch::Tensor& inputs, std::int64_t batch_size);
  // Bytes Python's torch.load reads as the state dict.
  std::string state_dict() const;
  // Bytes Python's torch.jit.load reads: the scripted module itself for a
  // torchscript model; for other models a trace of forward on a batch of
  // data_info()'s input shape (so it must not branch on its input's values).
  // Its tensors are on device().
  std::string torchscript();

 private:
  PluginRegistry registry_;
  RunConfig config_;
  DataInfo info_;
  InputScaling scaling_;  // the run's "standardize", applied before the model
  std::string checkpoint_dir_;
  std::shared_ptr<Model> model_;
  torch::Device device_ = torch::kCPU;
};

}  // namespace skein::core
