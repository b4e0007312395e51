// A model: ResidualMlp (residual_mlp.hpp, from libresidual_mlp_net) as a plugin.
#include <skein/kit/nn_helpers.hpp>
#include <skein/plugin.hpp>

#include "residual_mlp.hpp"

namespace {

class ResidualMlpPlugin final : public ResidualMlp {
 public:
  explicit ResidualMlpPlugin(const skein::PluginArgs& args)
      : ResidualMlp(skein::flat_size(args.data->input_shape), args.options.get_int("width"),
                    args.options.get_int("blocks"), args.data->num_classes) {}
};

}  // namespace

SKEIN_PLUGIN(ResidualMlpPlugin, model, "residual_mlp", "1.0.0", "MLP with residual hidden blocks",
             SKEIN_OPTION("width", integer, "64", "Width of every hidden layer", SKEIN_RANGE("[1, )")),
             SKEIN_OPTION("blocks", integer, "2", "Residual blocks", SKEIN_RANGE("[0, )")))
