// Test model plugin: wraps ProbeModel (from libtest_probe_api) with options.
#include "probe_model.hpp"
#include "skein/plugin.hpp"

namespace {
class ProbeModelPlugin final : public ProbeModel {
 public:
  explicit ProbeModelPlugin(const skein::PluginArgs& args)
      : ProbeModel(skein::flat_size(args.data->input_shape), args.options.get_int("hidden"),
                   args.data->num_classes, args.options.get_bool("unused")) {
    tag = args.options.get_string("tag");
    // A submodule under any name the user picks (e.g. a TorchScript keyword).
    const std::string extra = args.options.get_string("extra_module");
    if (!extra.empty()) register_module(extra, torch::nn::Linear(1, 1));
  }
};
}  // namespace

SKEIN_PLUGIN(ProbeModelPlugin, model, "probe_model", "0.1.0", "Test model with a custom method",
             SKEIN_OPTION("tag", string, "\"probe\"", "A user attribute"),
             SKEIN_OPTION("hidden", integer, "8", "Hidden width"),
             SKEIN_OPTION("unused", boolean, "false", "Add a parameter forward never uses"),
             SKEIN_OPTION("extra_module", string, "\"\"", "Register an unused submodule of this name"))
