#pragma once
// The forward pass of a batch and its loss, as training and evaluation both
// run it: input scaling, the precision's autocast, the model's outputs in
// float32, a failure named after the model and the inputs' shape, and (once)
// a classifier's class count checked against the data's.
#include <ostream>
#include <string>

#include <torch/types.h>

#include "skein/context.hpp"
#include "skein/training/data/input_scaling.hpp"
#include "skein/training/device/mixed_precision.hpp"
#include "skein/dataset.hpp"
#include "skein/detail/export.hpp"
#include "skein/loss.hpp"
#include "skein/model.hpp"

namespace skein::core {

struct ForwardParts {
  Model& model;
  Loss& loss;
  const InputScaling& scaling;
  const DataInfo& data_info;
  std::string model_name, loss_name;  // plugin names, for errors and crash reports
  Precision precision = Precision::fp32;  // mixed: forward and loss under autocast
  torch::Device device = torch::kCPU;      // the run's (RunInfo::device): the model is there
  std::ostream* log = nullptr;        // a failing model's whole message (multi-line TorchScript errors)
};

class SKEIN_EXPORT ForwardPass {
 public:
  explicit ForwardPass(ForwardParts parts) : p_(std::move(parts)) {}
  // Sets batch.outputs; returns the loss of the batch.
  torch::Tensor loss_of(Batch& batch);
  // The model's outputs in eval mode, without gradients, on the run's device
  // (`inputs` are copied there when they are elsewhere).
  torch::Tensor predict(const torch::Tensor& inputs);

 private:
  torch::Tensor outputs_of(const torch::Tensor& inputs);
  ForwardParts p_;
  bool outputs_checked_ = false;
};

}  // namespace skein::core
