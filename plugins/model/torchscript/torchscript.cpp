// Model "torchscript": a module written in Python and saved with
// torch.jit.script(m).save(path); every parameter is trained.
#include "skein/plugin.hpp"
#include "skein/io/scripted_model.hpp"

// Declared once: the schema and TorchScriptOptions.
#define TORCHSCRIPT_OPTIONS(X) \
  X(path, string, nullptr, "File written by torch.jit.save")

namespace {

SKEIN_OPTIONS_STRUCT(TorchScriptOptions, TORCHSCRIPT_OPTIONS)

class TorchScript final : public skein::ScriptedModel {
 public:
  explicit TorchScript(const skein::PluginArgs& args)
      : ScriptedModel(TorchScriptOptions(args.options).path, args.options.owner()) {}
};

}  // namespace

SKEIN_PLUGIN(TorchScript, model, "torchscript", "1.0.0",
             "A TorchScript module saved from Python (torch.jit.script(m).save(path)); forward(x) -> Tensor",
             SKEIN_OPTION_SPECS(TORCHSCRIPT_OPTIONS))
