#include "probe_model.hpp"

ProbeModel::ProbeModel(std::int64_t in, std::int64_t hidden, std::int64_t classes, bool unused)
    : fc1_(register_module("fc1", torch::nn::Linear(in, hidden))),
      fc2_(register_module("fc2", torch::nn::Linear(hidden, classes))) {
  if (unused) spare_ = register_module("spare", torch::nn::Linear(hidden, hidden));
}
ProbeModel::~ProbeModel() = default;
torch::Tensor ProbeModel::forward(const torch::Tensor& inputs) {
  return fc2_->forward(torch::relu(fc1_->forward(inputs.flatten(1))));
}
