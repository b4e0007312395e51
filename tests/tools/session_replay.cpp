// A program that trains through skein::Session on exactly the batches
// `skein train` draws for the same config (validation split, distributed
// sampler, evaluation shards): test_session compares the two runs bit for
// bit. One process, or each rank of a launcher feeding its own share.
// For in-memory datasets without augmentation (synthetic, npy, csv).
//
//   session_replay CONFIG RUN_DIR
#include <cstdio>

#include <torch/data/samplers/distributed.h>

#include "skein/training/config/config.hpp"
#include "skein/training/data/data_split.hpp"
#include "skein/host/launcher_env.hpp"
#include "skein/training/run/run_env.hpp"
#include "skein/session.hpp"

namespace core = skein::core;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: session_replay CONFIG RUN_DIR\n");
    return 2;
  }
  try {
    skein::SessionOptions options;
    options.run_dir = argv[2];
    skein::Session session(std::string(argv[1]), options);
    const skein::RunInfo& run = session.context().run();

    // The dataset, made as the trainer makes it.
    core::PluginRegistry registry;
    core::scan_plugins(registry, {});
    core::ConfigSources sources;
    sources.config_path = argv[1];
    const core::RunConfig config = core::resolve_config(sources, registry);
    skein::RunInfo data_run = run;
    data_run.seed = config.seed;
    const skein::Options data_options = config.data.make_options();
    auto data = registry.create<skein::Dataset>(*config.data.record, {data_options, data_run, nullptr, nullptr});
    const core::DataSplit all(core::memory_source(data->train()));
    const auto [train, valid] = all.split_off(config.valid_split, config.seed);

    const auto batch_size = static_cast<std::size_t>(config.batch_size);
    for (long epoch = 1; epoch <= config.max_epochs; ++epoch) {
      torch::data::samplers::DistributedRandomSampler sampler(static_cast<std::size_t>(train.size()),
                                                              run.world_size, run.rank);
      sampler.set_epoch(config.seed + static_cast<std::uint64_t>(epoch));
      sampler.reset();
      while (auto indices = sampler.next(batch_size)) {
        const skein::TensorSplit b = train.fetch({indices->begin(), indices->end()}, {});
        session.train_step(b.inputs, b.targets);
      }
      // Contiguous shards of the validation rows, as the trainer evaluates.
      const std::int64_t n = valid.size();
      const std::int64_t begin = n * run.rank / run.world_size, end = n * (run.rank + 1) / run.world_size;
      for (std::int64_t lo = begin; lo < end; lo += config.batch_size) {
        std::vector<std::int64_t> rows;
        for (std::int64_t i = lo; i < std::min(end, lo + config.batch_size); ++i) rows.push_back(i);
        const skein::TensorSplit b = valid.fetch(rows, {});
        session.eval_step(b.inputs, b.targets);
      }
      if (session.end_epoch()) break;
    }
    session.finish();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "session_replay: error: %s\n", e.what());
    return 1;
  }
}
