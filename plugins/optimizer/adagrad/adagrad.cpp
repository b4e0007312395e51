// Optimizer "adagrad": libtorch's Adagrad.
#include <torch/optim/adagrad.h>

#include "skein/kit/optimizers.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and AdagradValues.
#define ADAGRAD_OPTIONS(X)                                                                              \
  X(lr, number, "0.01", "Learning rate", SKEIN_RANGE("(0, )"))                                          \
  X(lr_decay, number, "0", "Learning-rate decay", SKEIN_RANGE("[0, )"))                                 \
  X(weight_decay, number, "0", "L2 penalty", SKEIN_RANGE("[0, )"))                                      \
  X(initial_accumulator_value, number, "0", "Initial value of the accumulators", SKEIN_RANGE("[0, )"))   \
  X(eps, number, "1e-10", "Term added to the denominator", SKEIN_RANGE("[0, )"))

namespace {

SKEIN_OPTIONS_STRUCT(AdagradValues, ADAGRAD_OPTIONS)

torch::optim::AdagradOptions read(const skein::Options& opt) {
  const AdagradValues v(opt);
  torch::optim::AdagradOptions o(v.lr);
  o.lr_decay(v.lr_decay)
      .weight_decay(v.weight_decay)
      .initial_accumulator_value(v.initial_accumulator_value)
      .eps(v.eps);
  return o;
}

using Adagrad = skein::LibtorchOptimizerOf<torch::optim::Adagrad, torch::optim::AdagradOptions, read>;

}  // namespace

SKEIN_PLUGIN(Adagrad, optimizer, "adagrad", "1.0.0", "Adagrad (libtorch's)", SKEIN_OPTION_SPECS(ADAGRAD_OPTIONS))
