#pragma once
// Optimizers: the optimizer plugin kind (config key `optimizer`).
#include <memory>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "skein/export.hpp"
#include "skein/options.hpp"

namespace skein {

// Base of every optimizer plugin: made once per run from its options, it
// creates the libtorch optimizer over the model's parameters. The trainer
// keeps this object alive as long as the optimizer (whose code lives in the
// plugin's library). Checkpoints save the optimizer with its own save().
class SKEIN_EXPORT OptimizerFactory {
 public:
  virtual ~OptimizerFactory();
  // `params`: the model's parameters, in named_parameters() order.
  virtual std::unique_ptr<torch::optim::Optimizer> create(std::vector<torch::Tensor> params) = 0;
};

// An optimizer plugin over one libtorch optimizer type: its options are
// read once, by the plugin's constructor; create() makes the optimizer.
template <class TorchOptimizer, class TorchOptions>
class LibtorchOptimizer : public OptimizerFactory {
 public:
  explicit LibtorchOptimizer(TorchOptions options) : options_(std::move(options)) {}
  std::unique_ptr<torch::optim::Optimizer> create(std::vector<torch::Tensor> params) override {
    return std::make_unique<TorchOptimizer>(std::move(params), options_);
  }

 private:
  TorchOptions options_;
};

// Option readers that fail with the option named (ConfigError).
// A positive, finite number (e.g. lr).
SKEIN_EXPORT double read_positive(const Options& options, const std::string& key);
// A finite number >= 0 (e.g. momentum, weight_decay, eps).
SKEIN_EXPORT double read_nonnegative(const Options& options, const std::string& key);

// The options Adam and AdamW share: betas, eps, weight_decay, amsgrad.
template <class AdamLikeOptions>
void read_adam_options(const Options& options, AdamLikeOptions& into) {
  const auto betas = options.get_number_list("betas");
  if (betas.size() != 2) options.fail("betas", "expected two numbers");
  for (double b : betas)
    if (!(b >= 0 && b < 1)) options.fail("betas", "each must be in [0, 1)");
  into.betas({betas[0], betas[1]})
      .eps(read_nonnegative(options, "eps"))
      .weight_decay(read_nonnegative(options, "weight_decay"))
      .amsgrad(options.get_bool("amsgrad"));
}

}  // namespace skein
