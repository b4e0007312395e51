// Parallel wrapper "none": one process, nothing to synchronise.
#include "skein/errors.hpp"
#include "skein/parallel.hpp"
#include "skein/plugin.hpp"

namespace {

class NoParallel final : public skein::Parallel {
 public:
  explicit NoParallel(const skein::PluginArgs& args) {
    if (args.run.world_size != 1)
      throw skein::ConfigError("parallel 'none' runs on one process, but WORLD_SIZE is " +
                               std::to_string(args.run.world_size) + "; use parallel 'ddp'");
  }
  void prepare(torch::nn::Module&) override {}
  void finish_gradients() override {}
  void all_reduce_sum(std::vector<double>&) override {}
  void all_reduce_max(std::vector<double>&) override {}
  void barrier() override {}
};

}  // namespace

SKEIN_PLUGIN(NoParallel, parallel, "none", "1.0.0", "Single process: no gradient or metric sync")
