// Dataset "synthetic": Gaussian blobs around one random centre per class,
// drawn from the plugin's own seed (reproducible, independent of the run).
// With task "regression" the target of a sample is a fixed random linear
// function of its inputs plus noise: float targets [N], one model output.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/types.h>

#include "skein/dataset.hpp"
#include "skein/kit/nn_helpers.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and SyntheticOptions.
#define SYNTHETIC_OPTIONS(X)                                                                       \
  X(samples, integer, "1024", "Training samples", SKEIN_RANGE("(0, )"))                            \
  X(test_samples, integer, "256", "Test samples (0: no test split)", SKEIN_RANGE("[0, )"))         \
  X(shape, int_list, "[1, 8, 8]", "Shape of one sample", SKEIN_RANGE("(0, )"))                     \
  X(classes, integer, "4", "Number of classes (blobs)", SKEIN_RANGE("[2, )"))                      \
  X(task, choice, "\"classification\"",                                                            \
    "classification (int64 class ids) or regression (float targets, one output)",                  \
    SKEIN_CHOICES("classification|regression"))                                                    \
  X(noise, number, "1.0", "Standard deviation around the class centre", SKEIN_RANGE("[0, )"))      \
  X(seed, integer, "0", "Seed of the data (not of the run)")

namespace {

SKEIN_OPTIONS_STRUCT(SyntheticOptions, SYNTHETIC_OPTIONS)

class Synthetic final : public skein::InMemoryDataset {
 public:
  explicit Synthetic(const skein::PluginArgs& args) {
    const auto& opt = args.options;
    const SyntheticOptions o(opt);
    info_.input_shape = o.shape;
    info_.num_classes = o.classes;
    const std::string& task = o.task;
    if (info_.input_shape.empty()) opt.fail(SyntheticOptions::names::shape, "must name at least one dimension");
    const auto samples = o.samples;
    const auto test_samples = o.test_samples;
    const double noise = o.noise;

    auto gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<std::uint64_t>(o.seed));
    std::vector<std::int64_t> centre_shape{info_.num_classes};
    centre_shape.insert(centre_shape.end(), info_.input_shape.begin(), info_.input_shape.end());
    const auto centres = torch::randn(centre_shape, gen);
    auto draw = [&](std::int64_t n) {
      auto shape = centre_shape;
      shape[0] = n;
      skein::TensorSplit s;
      s.targets = torch::randint(info_.num_classes, {n}, gen, torch::kLong);
      s.inputs = centres.index_select(0, s.targets) + noise * torch::randn(shape, gen);
      return s;
    };
    train_ = draw(samples);
    if (test_samples > 0) test_ = draw(test_samples);
    if (task == "regression") {
      const auto weights = torch::randn({skein::flat_size(info_.input_shape)}, gen);
      auto regress = [&](skein::TensorSplit& s) {
        s.targets = s.inputs.flatten(1).matmul(weights) + 0.1 * noise * torch::randn({s.size()}, gen);
      };
      regress(train_);
      if (test_) regress(*test_);
      info_.num_classes = 1;  // one output per sample
    }
  }
};

}  // namespace

SKEIN_PLUGIN(Synthetic, dataset, "synthetic", "1.0.0",
             "Seeded Gaussian blobs, one per class: for tests and benchmarks",
             SKEIN_OPTION_SPECS(SYNTHETIC_OPTIONS))
