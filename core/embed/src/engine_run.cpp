// The SDK harness's real engine (skein/testing.hpp, EngineRun): every
// rank a Trainer on its own thread, the ranks' store a FileStore.
#include <exception>
#include <sstream>
#include <thread>

#include <boost/filesystem.hpp>
#include <torch/csrc/distributed/c10d/FileStore.hpp>

#include "plugin_paths.hpp"
#include "skein/training/config/config.hpp"
#include "skein/training/run/log_stream.hpp"
#include "skein/training/engine/step_driver.hpp"
#include "skein/training/engine/trainer.hpp"
#include "skein/errors.hpp"
#include "skein/testing.hpp"

namespace skein::testing {

nlohmann::json small_run_config() {
  using namespace run_key;
  return {{kModel, {{"plugin", "mlp"}, {"hidden", {8}}}},
          {kData, {{"plugin", "synthetic"}, {"samples", 64}, {"test_samples", 16}, {"shape", {4}}, {"classes", 3}}},
          {kOptimizer, {{"name", "sgd"}, {"lr", 0.1}}},
          {kBatchSize, 8},
          {kMaxEpochs, 2},
          {kValidSplit, 0.25},
          {kSeed, 1}};
}

EngineRunOptions small_run(const std::string& slot, const nlohmann::json& plugin, int world_size) {
  EngineRunOptions o;
  o.config = small_run_config();
  o.config[slot] = plugin;
  o.world_size = world_size;
  return o;
}

struct RankEngine::Impl {
  RunInfo run;
  RunStore store;
  std::ostream* log = nullptr;
  std::unique_ptr<core::Trainer> trainer;
  std::unique_ptr<core::StepDriver> steps;  // the step API a Session drives, over trainer
};

RankEngine::RankEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RankEngine::~RankEngine() = default;

TrainContext& RankEngine::context() { return *impl_->trainer; }
long RankEngine::fit() { return impl_->trainer->fit(); }

void RankEngine::train_step(const torch::Tensor& inputs, const torch::Tensor& targets) {
  impl_->steps->step(inputs, targets, true);
}

void RankEngine::eval_step(const torch::Tensor& inputs, const torch::Tensor& targets) {
  impl_->steps->step(inputs, targets, false);
}

bool RankEngine::end_epoch() { return impl_->steps->end_epoch(); }
void RankEngine::end_training() { impl_->steps->end_training(); }

void RankEngine::save_checkpoint(const std::string& dir) { impl_->trainer->save_checkpoint(dir); }
void RankEngine::resume(const std::string& dir) { impl_->trainer->resume(dir); }

struct EngineRun::Impl {
  TempDir dir;  // the store's file and the run directory
  std::string run_dir = dir.str("run");
  core::PluginRegistry registry;
  core::RunConfig config;
  std::ostringstream main_log;
  core::NullStream other_logs;
  std::vector<std::unique_ptr<RankEngine>> ranks;
};

namespace {

// body(r) for every rank on its own thread; the lowest rank's exception, if any, after all ended.
void on_threads(int world, const std::function<void(int)>& body) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

EngineRun::EngineRun(EngineRunOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  if (options.world_size < 1) throw std::invalid_argument("EngineRun: world_size must be >= 1");
  load_plugins(s.registry, options.plugin_paths);
  core::ConfigSources sources;
  sources.config_path = s.dir.write("config.json", options.config.dump());
  sources.base = options.config;
  sources.world_size = options.world_size;
  s.config = core::resolve_config(sources, s.registry);
  boost::filesystem::create_directories(s.run_dir);
  for (int r = 0; r < options.world_size; ++r) {
    auto rank = std::make_unique<RankEngine::Impl>();
    rank->run.rank = rank->run.local_rank = r;
    rank->run.world_size = rank->run.local_world_size = options.world_size;
    rank->run.run_id = "engine-test";
    rank->run.run_dir = s.run_dir;
    rank->run.timeout_s = options.timeout_s;
    rank->log = r == 0 ? static_cast<std::ostream*>(&s.main_log) : &s.other_logs;
    if (options.world_size > 1) {
      auto store = c10::make_intrusive<c10d::FileStore>(s.dir.str("store"), options.world_size);
      store->setTimeout(std::chrono::milliseconds(static_cast<long>(options.timeout_s * 1000)));
      rank->store = RunStore{RunStore::Kind::file, store};
    }
    s.ranks.push_back(std::unique_ptr<RankEngine>(new RankEngine(std::move(rank))));
  }
  // Together: a parallel wrapper's process group waits for every rank.
  on_threads(options.world_size, [&](int r) {
    RankEngine::Impl& rank = *s.ranks[static_cast<std::size_t>(r)]->impl_;
    try {
      rank.trainer = std::make_unique<core::Trainer>(s.config, s.registry, rank.run, *rank.log,
                                                     rank.store ? &rank.store : nullptr);
      rank.steps = std::make_unique<core::StepDriver>(*rank.trainer);
    } catch (const ConfigError& e) {
      throw ConfigError(core::blame(e, s.config));
    }
  });
}

EngineRun::~EngineRun() = default;

int EngineRun::world_size() const { return static_cast<int>(impl_->ranks.size()); }
RankEngine& EngineRun::rank(int r) { return *impl_->ranks.at(static_cast<std::size_t>(r)); }
const std::string& EngineRun::run_dir() const { return impl_->run_dir; }
std::string EngineRun::log_text() const { return impl_->main_log.str(); }

void EngineRun::each_rank(const std::function<void(RankEngine&)>& body) {
  on_threads(world_size(), [&](int r) { body(rank(r)); });
}

std::vector<long> EngineRun::fit() {
  std::vector<long> epochs(impl_->ranks.size());
  each_rank([&](RankEngine& e) { epochs[static_cast<std::size_t>(e.context().run().rank)] = e.fit(); });
  return epochs;
}

std::string history_sync_problem(EngineRun& run) {
  const History& main = run.rank(0).context().history();
  for (int r = 1; r < run.world_size(); ++r) {
    const History& mine = run.rank(r).context().history();
    if (mine.dump() != main.dump())
      return "rank " + std::to_string(r) + "'s history differs from rank 0's";
  }
  // Each rank records at least one batch an epoch: the merged epoch holds more rows than any one rank ran.
  const auto& batches = main.get(0, history_key::kBatches);
  const long mine = run.rank(0).context().batches_per_epoch();
  if (run.world_size() > 1 && static_cast<long>(batches.size()) < run.world_size() * mine)
    return "epoch 1 holds " + std::to_string(batches.size()) + " batch records, fewer than " +
           std::to_string(run.world_size()) + " ranks x " + std::to_string(mine) + " train batches";
  return "";
}

}  // namespace skein::testing
