// Optimizer "adamw": libtorch's AdamW.
#include <torch/optim/adamw.h>

#include "skein/kit/optimizers.hpp"
#include "skein/plugin.hpp"

#define ADAMW_OPTIONS(X) SKEIN_ADAM_OPTIONS(X, "0.01", "Decoupled weight decay")

namespace {

SKEIN_OPTIONS_STRUCT(AdamWValues, ADAMW_OPTIONS)

torch::optim::AdamWOptions read(const skein::Options& opt) {
  return skein::adam_like_options<torch::optim::AdamWOptions>(AdamWValues(opt), opt);
}

using AdamW = skein::LibtorchOptimizerOf<torch::optim::AdamW, torch::optim::AdamWOptions, read>;

}  // namespace

SKEIN_PLUGIN(AdamW, optimizer, "adamw", "1.0.0", "AdamW (libtorch's): Adam with decoupled weight decay",
             SKEIN_OPTION_SPECS(ADAMW_OPTIONS))
