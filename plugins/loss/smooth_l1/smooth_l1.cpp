// Loss "smooth_l1": Huber-like loss, quadratic below `beta`, linear above.
#include <torch/nn/functional/loss.h>

#include "skein/kit/losses.hpp"
#include "skein/loss.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and SmoothL1Options.
#define SMOOTH_L1_OPTIONS(X) \
  X(beta, number, "1.0", "Where the loss turns from quadratic to linear", SKEIN_RANGE("[0, )"))

namespace {

SKEIN_OPTIONS_STRUCT(SmoothL1Options, SMOOTH_L1_OPTIONS)

class SmoothL1 final : public skein::ElementwiseLoss {
 public:
  explicit SmoothL1(const skein::PluginArgs& args) : ElementwiseLoss(args.options.owner()) {
    beta_ = SmoothL1Options(args.options).beta;
  }

 private:
  torch::Tensor apply(const torch::Tensor& outputs, const torch::Tensor& targets) override {
    namespace F = torch::nn::functional;
    return F::smooth_l1_loss(outputs, targets, F::SmoothL1LossFuncOptions(), beta_);
  }
  double beta_ = 1.0;
};

}  // namespace

SKEIN_PLUGIN(SmoothL1, loss, "smooth_l1", "1.0.0",
             "Smooth L1 (quadratic below beta, linear above); targets [N] fit outputs [N, 1]",
             SKEIN_OPTION_SPECS(SMOOTH_L1_OPTIONS))
