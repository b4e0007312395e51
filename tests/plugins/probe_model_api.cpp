#include "probe_model.hpp"

ProbeModel::ProbeModel(std::int64_t in, std::int64_t classes)
    : fc_(register_module("fc", torch::nn::Linear(in, classes))) {}
ProbeModel::~ProbeModel() = default;
torch::Tensor ProbeModel::forward(const torch::Tensor& inputs) {
  return fc_->forward(inputs.flatten(1));
}
