// Optimizer "adamw": libtorch's AdamW.
#include <torch/optim/adamw.h>

#include "skein/kit/optimizers.hpp"
#include "skein/plugin.hpp"

#define ADAMW_OPTIONS(X) SKEIN_ADAM_OPTIONS(X, "0.01", "Decoupled weight decay")

namespace {

torch::optim::AdamWOptions read(const skein::Options& opt) {
  torch::optim::AdamWOptions o(skein::read_positive(opt, "lr"));
  skein::read_adam_options(opt, o);
  return o;
}

using AdamW = skein::LibtorchOptimizerOf<torch::optim::AdamW, torch::optim::AdamWOptions, read>;

}  // namespace

SKEIN_PLUGIN(AdamW, optimizer, "adamw", "1.0.0", "AdamW (libtorch's): Adam with decoupled weight decay",
             SKEIN_OPTION_SPECS(ADAMW_OPTIONS))
