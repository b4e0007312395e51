// Loss "torchscript_loss" (plugin names are unique across kinds; "torchscript"
// is the model): a loss written in Python, as a TorchScript module whose
// forward(outputs, targets) returns the batch loss (a scalar). The file gets
// the model plugin's checks (format, operators that reach files or
// processes). With `classification` true, targets are class ids [N] (or class
// probabilities [N, C]) of class scores [N, C], and the trainer records
// accuracy, as for cross_entropy.
#include <torch/script.h>

#include "skein/errors.hpp"
#include "skein/loss.hpp"
#include "skein/plugin.hpp"
#include "skein/io/scripted_model.hpp"

// Declared once: the schema and ScriptLossOptions.
#define SCRIPT_LOSS_OPTIONS(X)                                                              \
  X(path, string, "\"\"", "File saved by torch.jit.save(torch.jit.script(loss_module))")    \
  X(classification, boolean, "false",                                                       \
    "Class scores [N, C] against class ids [N]: the trainer records accuracy")

namespace {

SKEIN_OPTIONS_STRUCT(ScriptLossOptions, SCRIPT_LOSS_OPTIONS)

class ScriptLoss final : public skein::Loss {
 public:
  explicit ScriptLoss(const skein::PluginArgs& args)
      : owner_(args.options.owner()),
        o_(args.options),
        script_(skein::load_script_module(o_.path, owner_, 2)) {
    script_.eval();
  }

  torch::Tensor compute(const torch::Tensor& outputs, const torch::Tensor& targets) override {
    const torch::Tensor loss = script_.forward({outputs, targets}).toTensor();
    if (loss.numel() != 1)
      throw skein::ConfigError(owner_ + ": the forward of '" + o_.path + "' returned " + std::to_string(loss.numel()) +
                               " values; a loss returns one (reduce it, e.g. with .mean())");
    return loss.reshape({});
  }

  bool classification() const override { return o_.classification; }

 private:
  std::string owner_;
  ScriptLossOptions o_;
  torch::jit::Module script_;
};

}  // namespace

SKEIN_PLUGIN(ScriptLoss, loss, "torchscript_loss", "1.0.0",
             "A loss from Python: a TorchScript module whose forward(outputs, targets) returns the batch loss",
             SKEIN_OPTION_SPECS(SCRIPT_LOSS_OPTIONS))
