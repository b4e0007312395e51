#include "skein/training/run/train_run.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>

#include <boost/filesystem.hpp>

#include "skein/io/atomic_file.hpp"
#include "skein/training/device/malloc_tuning.hpp"
#include "skein/training/checkpoint/checkpoint_dir.hpp"
#include "skein/training/engine/crash_report.hpp"
#include "skein/training/checkpoint/digest.hpp"
#include "skein/training/engine/eval_reduction.hpp"
#include "skein/training/run/from_main.hpp"
#include "skein/host/failure_report.hpp"
#include "skein/host/interrupt.hpp"
#include "skein/training/run/log_stream.hpp"
#include "skein/training/store/rendezvous.hpp"
#include "skein/training/config/run_config_history.hpp"
#include "skein/training/run/run_dir.hpp"
#include "skein/training/run/run_setup.hpp"
#include "skein/training/run/run_env.hpp"
#include "skein/training/engine/trainer.hpp"
#include "skein/errors.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/io/store.hpp"
#include "skein/run.hpp"
#include "skein/training/store/store_keys.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

namespace {
// Set when libskein_core is loaded, before main: the process's start, closely.
const auto kLoadedAt = std::chrono::steady_clock::now();

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}
}  // namespace

void prepare_resume(TrainRequest& request) {
  const std::string dir = request.resume_dir;
  // An --overwrite killed in its first epoch set the run aside: it comes back
  // first (rank 0 alone writes; skein's launcher is rank 0's process here).
  if (read_run_env(read_launcher_env(process_env())).is_main()) recover_run_dir(dir);
  if (!fs::exists(fs::path(dir) / run_files::kConfig))
    throw ConfigError("--resume " + dir + ": not a run directory (no config.json)");
  if (!request.sources.config_path.empty())
    throw ConfigError("--resume takes the config from " + dir + "/config.json; use --set to change it");
  if (!request.run_dir.empty() && fs::path(request.run_dir) != fs::path(dir))
    throw ConfigError("--resume " + dir + " writes into that directory; drop --run-dir");
  if (request.overwrite) throw ConfigError("--overwrite and --resume exclude each other");
  std::vector<std::string> unreadable;
  if (find_latest_checkpoint(run_files::path(dir, run_files::kCheckpoints), &unreadable).empty())
    throw ConfigError("--resume " + dir + ": no complete checkpoint in " + dir +
                      "/checkpoints (the checkpoint callback or a session's save_checkpoint writes them)" +
                      (unreadable.empty() ? "" : "; passed over: " + unreadable.front()));
  request.sources.config_path = run_files::path(dir, run_files::kConfig);
  request.run_dir = dir;
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

std::string agree_on_run_dir(const TrainRequest& request, const RunInfo& run, const RunStore& store) {
  if (!request.run_dir.empty()) return request.run_dir;
  return from_main(store, run, store_key::run_dir(),
                   run.is_main() ? new_run_dir("runs", request.sources.config_path) : std::string());
}

void check_integrity(Trainer& trainer, const RunStore& store) {
  const RunInfo& run = trainer.run();  // live recovery may have changed its rank and world size
  const std::string digest = std::string(trainer.history_synchronized() ? "" : kUnsyncedDigest) +
                             history_digest(trainer.history());
  if (store) store_set(*store.store, digest_key(run.run_id, run.rank), digest);
  if (!run.is_main() || launched_by_skein()) return;
  IntegrityReport report;
  if (store) {
    report = collect_digests(*store.store, run.run_id, run.world_size);
  } else {
    report.digests = {digest};
    report.consistent = true;
    report.enforced = trainer.history_synchronized();
  }
  report.write_run_json(run.run_dir);
  if (!report.consistent && report.enforced)
    throw std::runtime_error("integrity check failed: " + report.message);
}

namespace {

// An agent other than skein's launcher (torchrun --max-restarts) restarted
// every worker: attempt N > 0 continues the run in --run-dir from its newest
// complete checkpoint, as `skein train --max-restarts` does. Rank 0 decides
// (its file system holds the run) and the others follow through the store.
// Without a checkpoint the attempt starts as the first did (an existing run
// directory then needs --overwrite, as always: a restart never replaces
// outputs it cannot tell apart from another run's).
struct AgentRestart {
  std::string attempt = "0";  // TORCHELASTIC_RESTART_COUNT: "0" for the first attempt
  bool resume = false;        // --run-dir holds a complete checkpoint to continue from
};

// Rank 0's AgentRestart, on every rank in one round trip through the store.
// torchrun's elastic agents (--nnodes MIN:MAX) count their restarts each on
// its own: a node that joins a running job again starts at 0 beside agents
// that restarted. The run is restarted when any rank's agent restarted: rank
// 0 gathers the counts (the first that is not "0" is the attempt).
AgentRestart agreed_restart(const TrainRequest& request, const RunInfo& run, const LauncherEnv& launcher,
                            const RunStore& store) {
  const bool gather = launcher.launcher == Launcher::torchrun && store && run.world_size > 1;
  if (!gather && launcher.attempt == "0") return {};  // other launchers give every rank the same count
  if (gather && !run.is_main()) store_set(*store.store, store_key::agent_attempt(run.rank), launcher.attempt);
  nlohmann::json decided;
  if (run.is_main()) {
    std::string attempt = launcher.attempt;
    for (int r = 1; gather && r < run.world_size && attempt == "0"; ++r)
      attempt = store_get(*store.store, store_key::agent_attempt(r));
    const bool resume = attempt != "0" && !request.run_dir.empty() &&
                        !find_latest_checkpoint(run_files::path(request.run_dir, run_files::kCheckpoints)).empty();
    decided = {{"attempt", attempt}, {"resume", resume}};
  }
  decided = nlohmann::json::parse(from_main(store, run, store_key::agent_restart(), decided.dump()));
  return {decided.at("attempt").get<std::string>(), decided.at("resume").get<bool>()};
}

void continue_after_agent_restart(TrainRequest& request, const RunInfo& run, const LauncherEnv& launcher,
                                  const RunStore& store, std::ostream& log, bool live_joiner) {
  // A replacement of live recovery takes its state from a live peer instead.
  if (launcher.launcher == Launcher::skein || !request.resume_dir.empty() || live_joiner) return;
  const AgentRestart restart = agreed_restart(request, run, launcher, store);
  if (restart.attempt == "0") return;
  if (request.run_dir.empty()) {
    warn("restart " + restart.attempt +
         " by an external agent without --run-dir: a new run directory, training starts over");
    return;
  }
  log << "Restart " << restart.attempt << " (TORCHELASTIC_RESTART_COUNT): "
      << (restart.resume ? "resuming " + request.run_dir : std::string("no checkpoint yet, starting over")) << "\n";
  if (!restart.resume) return;
  request.sources.config_path.clear();  // the run's own config.json, with the flags on top
  request.overwrite = false;
  request.resume_dir = request.run_dir;
  prepare_resume(request);
}

}  // namespace

RunConfig resolve_run_config(const TrainRequest& request, PluginRegistry& registry) {
  if (request.resume_dir.empty()) return resolve_config(request.sources, registry);
  ConfigSources sources = request.sources;
  const nlohmann::json before = latest_run_config(request.resume_dir);
  use_recorded_plugins(before, registry);
  sources.base = before;
  RunConfig config = resolve_config(sources, registry);
  check_resume_changes(before, config.resolved);
  warn_changed_versions(before, config.resolved);
  return config;
}

std::unique_ptr<RunDirectory> claim_run_dir(const TrainRequest& request, const RunInfo& run) {
  if (!run.is_main()) return nullptr;
  const bool resuming = !request.resume_dir.empty();
  recover_run_dir(run.run_dir);  // what it holds is then what the checks see
  if (!resuming) check_run_dir_usable(run.run_dir, request.overwrite);
  auto dir = std::make_unique<RunDirectory>(run.run_dir);
  if (!resuming) {
    check_run_dir_usable(run.run_dir, request.overwrite);
    dir->set_aside_previous_run();  // before any plugin writes
  }
  return dir;
}

void open_run_dir(RunDirectory& dir, const TrainRequest& request, const RunConfig& config,
                  const LauncherEnv& launcher, RunLog& log) {
  const bool resuming = !request.resume_dir.empty();
  if (resuming) {
    dir.continue_run();
  } else {
    dir.start_new_run();
    write_file_atomic(run_files::path(dir.path(), run_files::kConfig), config.resolved.dump(2) + "\n");
  }
  append_config_history(dir.path(), resuming ? "resume" : "start", request.sources, config.resolved,
                        launcher.label);
  log.attach(run_files::path(dir.path(), run_files::kLog), resuming);
  set_crash_log(run_files::path(dir.path(), run_files::kLog));
  set_crash_checkpoints(run_files::path(dir.path(), run_files::kCheckpoints));
}

namespace {

// The test split's result: into `outcome` and `results`, and one log line.
void record_test(const EvalResult& test, TrainOutcome& outcome, nlohmann::json& results, std::ostream& log) {
  outcome.test_accuracy = test.accuracy;
  outcome.test_loss = test.loss;
  results["test_loss"] = test.loss;
  results["test_samples"] = test.samples;
  for (const auto& [name, value] : test.metrics) results["test_" + name] = value;
  if (!test.confusion.empty()) results["test_confusion_matrix"] = test.confusion;
  if (test.confusion_left_out > 0) {
    const std::string note = "left out: " + std::to_string(test.confusion_left_out) + " classes, more than the " +
                             std::to_string(kMaxConfusionClasses) + " it is kept for";
    results["test_confusion_matrix_note"] = note;
    log << "Test confusion matrix " << note << "\n";
  }
  log << std::fixed << std::setprecision(4);
  if (test.accuracy) {
    results["test_accuracy"] = *test.accuracy;
    log << "Test accuracy: " << *test.accuracy << "  test loss: " << test.loss;
  } else {
    log << "Test loss: " << test.loss;
  }
  log << "  (" << test.samples << " samples)\n";
}

// Start-up and memory, for benchmarks: the slowest and largest rank (a collective).
void record_costs(Trainer& trainer, nlohmann::json& results) {
  const auto first = trainer.first_batch_at();
  const double peak = peak_rss_mb();
  std::vector<double> costs{first ? std::chrono::duration<double>(*first - kLoadedAt).count() : 0.0, peak};
  trainer.parallel().all_reduce_max(costs);
  results["time_to_first_batch_s"] = costs[0];
  results["peak_rss_mb"] = costs[1];
  // Each rank's own peak (sharded state shows there: zero's rank 0 holds more).
  const RunInfo& run = trainer.run();
  std::vector<double> per_rank(static_cast<std::size_t>(run.world_size), 0.0);
  per_rank[static_cast<std::size_t>(run.rank)] = peak;
  trainer.parallel().all_reduce_sum(per_rank);
  results["peak_rss_mb_per_rank"] = per_rank;
  // Each rank's optimizer state, where the optimizer names its tensors (the
  // same factory on every rank, so all take part or none): zero's about 1/W of ddp's
  // (2/W with live recovery, which mirrors each shard on a second rank).
  if (const auto bytes = trainer.optimizer_state_bytes()) {
    std::vector<double> state(static_cast<std::size_t>(run.world_size), 0.0);
    state[static_cast<std::size_t>(run.rank)] = static_cast<double>(*bytes) / (1 << 20);
    trainer.parallel().all_reduce_sum(state);
    results["optimizer_state_mb_per_rank"] = state;
  }
  // What each checkpoint cost training: the main rank's hold, which writes
  // them (the others wait for it unless they are written in the background).
  results["checkpoint_stall_s"] = trainer.checkpoint_stalls();
  results["malloc_tuned"] = tune_allocator_for_training().tuned;
}

// Creates the trainer into `trainer` (a config error names the config key it
// comes from) and restores the newest checkpoint on --resume. The caller owns
// the trainer even when this throws, so that a failure is reported while its
// connections are still open.
void start_trainer(const TrainRequest& request, const RunConfig& config, const PluginRegistry& registry,
                   const RunInfo& run, const RunStore& store, std::ostream& log, std::unique_ptr<Trainer>& trainer) {
  try {
    trainer = std::make_unique<Trainer>(config, registry, run, log, store ? &store : nullptr);
  } catch (const ConfigError& e) {
    throw ConfigError(blame(e, config));
  }
  if (!request.resume_dir.empty()) {
    const std::string checkpoint =
        checkpoint_to_resume(run_files::path(run.run_dir, run_files::kCheckpoints), run.is_main());
    trainer->resume(checkpoint, RestoreOptions{false});  // a failed load ends the process
    log << "Resumed from " << checkpoint << "\n";
  }
}

// Trains, tests, writes results.json and checks that the ranks agree.
TrainOutcome train_and_test(Trainer& trainer, const RunStore& store, std::ostream& log) {
  TrainOutcome outcome;
  const RunInfo& run = trainer.run();  // live recovery may change its rank and world size
  outcome.is_main = run.is_main();
  outcome.run_dir = run.run_dir;
  outcome.epochs = trainer.fit();
  if (trainer.left_before_joining()) return outcome;  // live recovery: nothing of the run's to report
  outcome.is_main = run.is_main();
  if (const long epoch = trainer.write_final_model())
    log << "Final model (epoch " << epoch << "): " << run.run_dir << "/checkpoints/" << kFinalModel << "\n";
  outcome.stop_reason = trainer.stop_reason();
  if (!outcome.stop_reason.empty())
    log << "Stopped after epoch " << outcome.epochs << ": " << outcome.stop_reason << "\n";
  nlohmann::json results = {
      {"epochs", outcome.epochs}, {"stop_reason", outcome.stop_reason}, {"device", trainer.run().device}};
  if (auto test = trainer.test()) record_test(*test, outcome, results, log);
  record_costs(trainer, results);
  if (run.is_main()) write_file_atomic(run_files::path(run.run_dir, run_files::kResults), results.dump(2) + "\n");
  trainer.report_test(results);
  check_integrity(trainer, store);
  return outcome;
}

// What an interrupted run keeps (the model of its last complete epoch) and
// how to go on, in the error line.
Interrupted after_interrupt(const Interrupted& stop, Trainer& trainer, const std::string& run_dir) {
  std::string text = stop.what();
  try {
    trainer.finish_checkpoints();  // one written in the background is complete before it is named
  } catch (const std::exception& e) {
    text += "; " + first_line(e.what());
  }
  try {
    if (const long epoch = trainer.write_final_model())
      text += "; the model of epoch " + std::to_string(epoch) + " is in " + run_dir + "/checkpoints/" + kFinalModel;
  } catch (const std::exception& e) {
    text += "; the final model could not be written: " + first_line(e.what());
  }
  if (!find_latest_checkpoint(run_files::path(run_dir, run_files::kCheckpoints)).empty())
    text += "; continue with: skein train --resume " + run_dir;
  else
    text += "; no checkpoint to resume from (the checkpoint callback writes them)";
  return Interrupted(stop.signal(), text);
}

}  // namespace

TrainOutcome run_training(const TrainRequest& original_request) {
  const AllocatorTuning& malloc_tuning = tune_allocator_for_training();  // before the data's first allocation
  const LauncherEnv launcher = read_launcher_env(process_env());
  RunInfo run = read_run_env(launcher);
  // A replacement that joins a live run (live_recovery.hpp) learns its rank
  // when taken in; until then it starts as a rank other than 0, which
  // claims and writes nothing.
  const bool joiner = live_join_requested(run, launcher);
  install_crash_handler(run.rank);
  RunStore store = open_run_store(run, launcher);
  // The log buffers until the run directory is known: warnings from here on
  // reach train.log too.
  RunLog run_log(run.is_main());
  run_log.note(malloc_tuning.summary + "\n");
  run_log.note("launched by: " + launcher.label + "\n");
  std::ostream& log = run_log.stream();
  WarningLogScope warnings_to_log(run_log);
  TrainRequest request = original_request;
  continue_after_agent_restart(request, run, launcher, store, log, joiner);
  PluginRegistry registry;
  scan_plugins(registry, request.plugin_dirs);
  request.sources.world_size = run.world_size;
  const RunConfig config = resolve_run_config(request, registry);
  if (!config.parallel_chosen.empty()) log << config.parallel_chosen << "\n";

  run.run_dir = agree_on_run_dir(request, run, store);
  const bool resuming = !request.resume_dir.empty();
  std::unique_ptr<RunDirectory> dir = claim_run_dir(request, run);

  // One process stops at a batch boundary on Ctrl-C or SIGTERM; several
  // are stopped together by their launcher (interrupt.hpp).
  std::optional<InterruptHandler> interrupts;
  if (run.world_size == 1) interrupts.emplace();

  // A failure is reported before the trainer (and its connections) goes away,
  // so the launcher can tell it from the failures of the peers it causes.
  std::unique_ptr<Trainer> trainer;
  try {
    start_trainer(request, config, registry, run, store, log, trainer);
    if (joiner) trainer->join_as_replacement();
    trainer->on_world_change([&run_log, &run](const RunInfo& now) {
      run_log.set_main(now.is_main(), run_files::path(run.run_dir, run_files::kLog));
    });
    trainer->keep_epoch_weights(interrupts.has_value());
    if (dir) {
      open_run_dir(*dir, request, config, launcher, run_log);
      // The previous run (--overwrite) goes once this one has an epoch to show.
      trainer->on_epoch_recorded([&dir](long) { dir->commit_new_run(); });
    }
    log << "Run directory: " << run.run_dir;
    if (run.world_size > 1) log << " (" << run.world_size << " processes)";
    log << "\n";
    TrainOutcome outcome = train_and_test(*trainer, store, log);
    if (dir) dir->commit_new_run();
    log.flush();
    return outcome;
  } catch (const std::exception& e) {
    // Ctrl-C: the model of the last complete epoch is kept, and the error
    // line says where it is and how to continue.
    // A checkpoint written in the background completes first: the failed
    // start's checks and the restart below see it.
    if (trainer) {
      try {
        trainer->finish_checkpoints();
      } catch (const std::exception& written) {
        warn(first_line(written.what()));
      }
    }
    std::optional<Interrupted> interrupted;
    if (const auto* stop = dynamic_cast<const Interrupted*>(&e); stop && trainer && trainer->batches_done() > 0)
      interrupted = after_interrupt(*stop, *trainer, run.run_dir);
    const std::exception& reported = interrupted ? *interrupted : e;
    // A run that never completed a batch leaves nothing behind (errors the
    // first batch finds, such as a model's wrong output width, are a failed
    // start), and one that replaced another but never completed an epoch
    // brings the other back (a resume keeps its run), unless it wrote a
    // complete checkpoint: then it is the run, the other goes.
    const bool trained = trainer && trainer->batches_done() > 0;
    if (dir && !resuming && !dir->committed() && dir->holds_previous_run() && !dir->new_run_checkpoint().empty()) {
      try {
        dir->commit_new_run();
      } catch (const std::exception&) {
        // The original error matters more; the next start finishes it.
      }
    }
    if (dir && !resuming && !dir->committed() && (dir->holds_previous_run() || !trained)) {
      try {
        dir->discard_failed_start();
      } catch (const std::exception&) {
        // The original error matters more.
      }
    } else {
      // The run stays: its log ends with why it stopped (stderr has the line too).
      run_log.note("skein: error: " + failure_line(reported.what()) + "\n");
    }
    report_failure(reported);
    if (interrupted) throw *interrupted;
    throw;
  }
}

}  // namespace skein::core
