// Test callback: reaches a TorchScript model's own attribute and method
// through ctx.model<skein::ScriptedModel>() and records them every epoch.
#include "skein/callback.hpp"
#include "skein/context.hpp"
#include "skein/plugin.hpp"
#include "skein/io/scripted_model.hpp"

namespace {

class ScriptProbe final : public skein::Callback {
 public:
  explicit ScriptProbe(const skein::PluginArgs&) {}
  void on_epoch_end(skein::TrainContext& ctx) override {
    torch::jit::Module& script = ctx.model<skein::ScriptedModel>().script();
    ctx.history().record("script_scale", script.attr("scale").toDouble());
    ctx.history().record("script_describe", script.run_method("describe").toDouble());
    ctx.history().record("script_training", script.is_training() ? 1.0 : 0.0);
  }
};

}  // namespace

SKEIN_PLUGIN(ScriptProbe, callback, "script_probe", "1.0.0",
             "Test: records a scripted model's attribute and method through ctx.model<ScriptedModel>()")
