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
  }
};
}  // namespace

SKEIN_PLUGIN(ProbeModelPlugin, model, "probe_model", "0.1.0", "Test model with a custom method",
             SKEIN_OPTION("tag", string, "\"probe\"", "A user attribute"),
             SKEIN_OPTION("hidden", integer, "8", "Hidden width"),
             SKEIN_OPTION("unused", boolean, "false", "Add a parameter forward never uses"))
