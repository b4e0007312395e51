#pragma once
// A user model with its own attribute and method, reached from a callback
// through ctx.model<ProbeModel>(). It lives in its own shared library (as a
// user's model library would) so both test plugins share one typeinfo.
#include <torch/nn/modules/linear.h>

#include "skein/model.hpp"
#include "skein/kit/nn_helpers.hpp"

class SKEIN_EXPORT ProbeModel : public skein::Model {
 public:
  // in -> hidden -> classes; `unused` adds a layer forward never touches.
  ProbeModel(std::int64_t in, std::int64_t hidden, std::int64_t classes, bool unused);
  ~ProbeModel() override;
  torch::Tensor forward(const torch::Tensor& inputs) override;

  // The user's own API, invisible to the trainer.
  void note_epoch(long epoch) { epochs_seen.push_back(epoch); }
  std::vector<long> epochs_seen;
  std::string tag = "probe";

 private:
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr}, spare_{nullptr};
};
