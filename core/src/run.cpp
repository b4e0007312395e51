#include "skein/core/run.hpp"

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>

#include <boost/filesystem.hpp>

#include "skein/atomic_file.hpp"
#include "skein/core/log_stream.hpp"
#include "skein/core/trainer.hpp"
#include "skein/errors.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

void scan_plugins(PluginRegistry& registry, const std::vector<std::string>& extra_dirs) {
  const char* debug = std::getenv("SKEIN_DEBUG_PLUGINS");
  registry.set_debug(debug && std::string(debug) != "0" && std::string(debug).size() > 0);
  for (const auto& dir : default_plugin_dirs()) registry.scan_directory(dir);
  for (const auto& dir : extra_dirs) {
    if (!fs::is_directory(dir)) throw ConfigError("--plugin-dir '" + dir + "' is not a directory");
    registry.scan_directory(dir);
  }
}

std::string new_run_dir(const std::string& parent, const std::string& config_path) {
  std::string stem = config_path.empty() ? "run" : fs::path(config_path).stem().string();
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::ostringstream name;
  name << stem << '-' << std::put_time(&tm, "%Y%m%d-%H%M%S");
  fs::path base = fs::path(parent) / name.str();
  fs::path candidate = base;
  for (int i = 2; fs::exists(candidate); ++i) candidate = base.string() + "-" + std::to_string(i);
  return candidate.string();
}

namespace {

// Refuses a directory that already holds a run; creates it otherwise.
void prepare_run_dir(const std::string& dir) {
  for (const char* f : {"config.json", "history.json", "results.json"}) {
    if (fs::exists(fs::path(dir) / f))
      throw ConfigError("run directory '" + dir + "' already holds a run (" + f +
                        "); choose another --run-dir");
  }
  boost::system::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ConfigError("cannot create run directory '" + dir + "': " + ec.message());
}

}  // namespace

TrainOutcome run_training(const TrainRequest& request) {
  PluginRegistry registry;
  scan_plugins(registry, request.plugin_dirs);
  const RunConfig config = resolve_config(request.sources, registry);

  RunInfo run;
  run.run_dir = request.run_dir.empty() ? new_run_dir("runs", request.sources.config_path)
                                        : request.run_dir;
  prepare_run_dir(run.run_dir);
  write_file_atomic(run.run_dir + "/config.json", config.resolved.dump(2) + "\n");

  std::ofstream log_file(run.run_dir + "/train.log");
  if (!log_file) throw std::runtime_error("cannot write " + run.run_dir + "/train.log");
  TeeBuf tee(std::cout.rdbuf(), log_file.rdbuf());
  std::ostream log(&tee);

  Trainer trainer(config, registry, run, log);
  log << "Run directory: " << run.run_dir << "\n";
  TrainOutcome outcome;
  outcome.run_dir = run.run_dir;
  outcome.epochs = trainer.fit();
  outcome.stop_reason = trainer.stop_reason();
  if (!outcome.stop_reason.empty()) log << "Stopped after epoch " << outcome.epochs << ": " << outcome.stop_reason << "\n";

  nlohmann::json results = {{"epochs", outcome.epochs}, {"stop_reason", outcome.stop_reason}};
  if (auto test = trainer.test()) {
    outcome.test_accuracy = test->accuracy;
    outcome.test_loss = test->loss;
    results["test_accuracy"] = test->accuracy;
    results["test_loss"] = test->loss;
    results["test_samples"] = test->samples;
    log << std::fixed << std::setprecision(4) << "Test accuracy: " << test->accuracy
        << "  test loss: " << test->loss << "  (" << test->samples << " samples)\n";
  }
  write_file_atomic(run.run_dir + "/results.json", results.dump(2) + "\n");
  log.flush();
  return outcome;
}

}  // namespace skein::core
