#pragma once
#include <vector>

#include <torch/nn/module.h>

#include "skein/export.hpp"

namespace skein {

// Base of every parallel wrapper. A wrapper never replaces the model: it
// attaches to the user's module (broadcast, gradient hooks) and offers the
// collectives the trainer and callbacks need to agree across ranks.
class SKEIN_EXPORT Parallel {
 public:
  virtual ~Parallel();
  // Called once before training, with the user's module.
  virtual void prepare(torch::nn::Module& model) = 0;
  // Whether the coming backward pass must reduce gradients (false on
  // non-final micro-batches of gradient accumulation).
  virtual void set_gradient_sync(bool enabled) { (void)enabled; }
  // After backward: gradients are the average over ranks when this returns.
  virtual void finish_gradients() = 0;
  // Element-wise sum / maximum over ranks, in place. Every rank must call
  // these in the same order (they are collectives).
  virtual void all_reduce_sum(std::vector<double>& values) = 0;
  virtual void all_reduce_max(std::vector<double>& values) = 0;
  virtual void barrier() = 0;
};

}  // namespace skein
