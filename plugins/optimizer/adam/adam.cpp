// Optimizer "adam": libtorch's Adam.
#include <torch/optim/adam.h>

#include "skein/kit/optimizers.hpp"
#include "skein/plugin.hpp"

#define ADAM_OPTIONS(X) SKEIN_ADAM_OPTIONS(X, "0", "L2 penalty")

namespace {

SKEIN_OPTIONS_STRUCT(AdamValues, ADAM_OPTIONS)

torch::optim::AdamOptions read(const skein::Options& opt) {
  return skein::adam_like_options<torch::optim::AdamOptions>(AdamValues(opt), opt);
}

using Adam = skein::LibtorchOptimizerOf<torch::optim::Adam, torch::optim::AdamOptions, read>;

}  // namespace

SKEIN_PLUGIN(Adam, optimizer, "adam", "1.0.0", "Adam (libtorch's); weight_decay is an L2 penalty",
             SKEIN_OPTION_SPECS(ADAM_OPTIONS))
