// Model "torchscript": a module written in Python and saved with
// torch.jit.script(m).save(path); every parameter is trained.
#include "skein/plugin.hpp"
#include "skein/kit/scripted_model.hpp"

namespace {

class TorchScript final : public skein::ScriptedModel {
 public:
  explicit TorchScript(const skein::PluginArgs& args)
      : ScriptedModel(args.options.get_string("path"), args.options.owner()) {}
};

}  // namespace

SKEIN_PLUGIN(TorchScript, model, "torchscript", "1.0.0",
             "A TorchScript module saved from Python (torch.jit.script(m).save(path)); forward(x) -> Tensor",
             SKEIN_REQUIRED_OPTION("path", string, "File written by torch.jit.save"))
