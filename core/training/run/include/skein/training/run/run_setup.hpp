#pragma once
// The steps that open a run, shared by skein train (run.cpp) and sessions
// (session.cpp): the config, the agreed run directory, rank 0's claim on it,
// and its first files once every plugin exists.
#include <memory>
#include <string>

#include "skein/training/config/config.hpp"
#include "skein/host/launcher_env.hpp"
#include "skein/training/run/log_stream.hpp"
#include "skein/host/plugin_registry.hpp"
#include "skein/training/run/train_run.hpp"
#include "skein/training/run/run_dir.hpp"
#include "skein/run.hpp"
#include "skein/run_store.hpp"

namespace skein::core {

// The run's config; on --resume, from the config in force at the end of the
// run, with the plugin files it recorded, refusing changes a resume cannot make.
SKEIN_EXPORT RunConfig resolve_run_config(const TrainRequest& request, PluginRegistry& registry);

// The run directory every rank uses: the request's, or one chosen by rank 0
// and shared through the store.
SKEIN_EXPORT std::string agree_on_run_dir(const TrainRequest& request, const RunInfo& run, const RunStore& store);

// Rank 0's hold on the run directory (null elsewhere): locked, and checked
// before and after the lock.
SKEIN_EXPORT std::unique_ptr<RunDirectory> claim_run_dir(const TrainRequest& request, const RunInfo& run);

// Every plugin exists and accepted its options: the run directory becomes
// this run's, config.json and config_history.jsonl are written, the log starts.
SKEIN_EXPORT void open_run_dir(RunDirectory& dir, const TrainRequest& request, const RunConfig& config,
                               const LauncherEnv& launcher, RunLog& log);

class Trainer;
// After training: publishes this rank's history digest; without skein's
// launcher, rank 0 compares every rank's and writes run.json (a collective).
// The trainer's run: live recovery may have changed its rank and world size.
SKEIN_EXPORT void check_integrity(Trainer& trainer, const RunStore& store);

}  // namespace skein::core
