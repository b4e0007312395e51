// skein::Session (skein/session.hpp): a run opened as skein train opens one
// (run_setup.hpp), driven batch by batch through the Trainer's steps.
#include "skein/session.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include <c10/util/StringUtil.h>

#include "skein/training/checkpoint/checkpoint_dir.hpp"
#include "skein/training/checkpoint/checkpoint_meta.hpp"
#include "skein/training/config/config.hpp"
#include "skein/training/run/from_main.hpp"
#include "skein/training/run/log_stream.hpp"
#include "skein/training/run/run_env.hpp"
#include "skein/training/run/run_setup.hpp"
#include "skein/training/engine/step_driver.hpp"
#include "skein/training/store/store_keys.hpp"
#include "skein/training/engine/trainer.hpp"
#include "skein/errors.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/run.hpp"

namespace skein {

using namespace skein::core;

namespace {

core::TrainRequest request_of(const nlohmann::json& config, const SessionOptions& options) {
  core::TrainRequest request;
  request.run_dir = options.run_dir;
  request.overwrite = options.overwrite;
  request.plugin_dirs = options.plugin_dirs;
  request.sources.data_required = false;
  if (!options.resume.empty()) {
    if (!config.is_null() && !(config.is_object() && config.empty()))
      throw ConfigError("session: resume '" + options.resume +
                        "' takes the config from the run's config.json; pass a null config");
    request.resume_dir = options.resume;
    request.run_dir.clear();
    prepare_resume(request);
    return request;
  }
  if (config.is_string()) {
    request.sources.config_path = config.get<std::string>();
  } else if (config.is_object()) {
    request.sources.base = config;
  } else {
    throw ConfigError("session: the config must be a JSON object or the path of a config file, got " +
                      std::string(config.type_name()));
  }
  return request;
}

}  // namespace

struct Session::Impl {
  SessionOptions options;
  LauncherEnv launcher;
  RunInfo run;
  RunStore store;
  RunLog log;
  PluginRegistry registry;
  RunConfig config;
  std::unique_ptr<RunDirectory> dir;
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<StepDriver> steps;  // the engine's step API over trainer
  bool finished = false;
  bool warned_partial_group = false;
  long saves = 0;  // save_checkpoint calls so far: each agrees under a key of its own

  Impl(const nlohmann::json& config_json, SessionOptions opts)
      : options(std::move(opts)),
        launcher(read_launcher_env(process_env())),
        run(read_run_env(launcher)),
        store(open_run_store(run, launcher)),
        log(run.is_main(), options.echo_log) {
    TrainRequest request = request_of(config_json, options);
    scan_plugins(registry, request.plugin_dirs);
    request.sources.world_size = run.world_size;
    config = resolve_run_config(request, registry);
    if (!config.parallel_chosen.empty()) log.stream() << config.parallel_chosen << "\n";
    run.run_dir = agree_on_run_dir(request, run, store);
    dir = claim_run_dir(request, run);
    try {
      try {
        trainer = std::make_unique<Trainer>(config, registry, run, log.stream(), store ? &store : nullptr);
        steps = std::make_unique<StepDriver>(*trainer);
      } catch (const ConfigError& e) {
        throw ConfigError(blame(e, config));
      }
      if (!request.resume_dir.empty())
        restore(checkpoint_to_resume(run_files::path(run.run_dir, run_files::kCheckpoints), run.is_main()));
      if (dir) {
        open_run_dir(*dir, request, config, launcher, log);
        trainer->on_epoch_recorded([this](long) { dir->commit_new_run(); });
      }
      if (options.batches_per_epoch > 0 || !config.data.record)
        trainer->set_batches_per_epoch(std::max(0L, options.batches_per_epoch));
      log.stream() << "Session: run directory " << run.run_dir;
      if (run.world_size > 1) log.stream() << " (rank " << run.rank << " of " << run.world_size << ")";
      log.stream() << "\n";
    } catch (...) {
      if (dir && request.resume_dir.empty() && !dir->committed()) {
        try {
          dir->discard_failed_start();
        } catch (const std::exception&) {
          // The original error matters more.
        }
      }
      throw;
    }
  }

  void restore(const std::string& checkpoint) {
    // The program feeds the batches: where inside an epoch to continue is its
    // own. Refused before anything is restored. One the program has just
    // saved may still be written in the background: it is complete first.
    trainer->finish_checkpoints();
    const CheckpointMeta meta = read_checked_checkpoint(checkpoint);  // read once, for both
    if (meta.open_epoch)
      throw ConfigError("checkpoint " + checkpoint +
                        " was written inside an epoch (every_n_steps); a session continues only from a "
                        "checkpoint written at an epoch's end (epoch_*)");
    trainer->resume(checkpoint, meta);  // all or nothing
    log.stream() << "Resumed from " << checkpoint << "\n";
  }

  // Where save_checkpoint(name) writes, once every rank has passed the same
  // name and none refused it (the main rank alone checks what is there): a
  // collective write would otherwise wait on parts that never come. Each
  // rank's name and refusal goes through the run's store, bounded by its
  // timeout; a difference is one line, the same on every rank.
  std::string agreed_save_path(const std::string& name) {
    std::string path, refused;
    try {
      path = checkpoint_save_path(run, name, options.allow_outside_run_dir);
    } catch (const std::invalid_argument& e) {
      refused = e.what();
    }
    const std::vector<std::string> all =
        every_rank_value(store, run, store_key::session_checkpoint_name(run.run_id, ++saves),
                         nlohmann::json::array({name, refused}).dump(), "save_checkpoint's name");
    std::vector<std::pair<std::string, std::string>> by_rank;  // name, refusal
    for (const std::string& v : all) {
      const auto pair = nlohmann::json::parse(v);
      by_rank.emplace_back(pair.at(0).get<std::string>(), pair.at(1).get<std::string>());
    }
    std::vector<std::pair<std::string, std::string>> names;  // each name, with the ranks that passed it
    for (std::size_t r = 0; r < by_rank.size(); ++r) {
      auto it = std::find_if(names.begin(), names.end(), [&](const auto& n) { return n.first == by_rank[r].first; });
      if (it == names.end()) it = names.insert(names.end(), {by_rank[r].first, ""});
      it->second += (it->second.empty() ? "" : ", ") + std::to_string(r);
    }
    if (names.size() > 1) {
      std::string which;
      for (const auto& [passed, ranks] : names)
        which += (which.empty() ? "'" : ", '") + passed + "' (rank" + (ranks.find(',') == std::string::npos ? " " : "s ") +
                 ranks + ")";
      throw std::invalid_argument("save_checkpoint: the ranks passed different names: " + which +
                                  "; it is a collective: every rank passes the same name");
    }
    for (std::size_t r = 0; r < by_rank.size(); ++r)
      if (!by_rank[r].second.empty())
        throw std::invalid_argument(by_rank[r].second +
                                    (static_cast<int>(r) == run.rank ? "" : " (refused on rank " + std::to_string(r) + ")"));
    return path;
  }

  void check_usable(const char* call) const {
    if (finished) throw std::logic_error(std::string(call) + ": the session is finished");
  }

  void check_between_epochs(const char* call) const {
    check_usable(call);
    if (steps->epoch_open())
      throw std::logic_error(std::string(call) + ": epoch " + std::to_string(trainer->epoch()) +
                             " is open (steps since the last end_epoch); call it after end_epoch");
  }

  // Inputs in the model's dtype: float32 used as they are, other types converted.
  torch::Tensor model_inputs(const torch::Tensor& inputs, const char* call) const {
    if (!inputs.defined()) throw std::invalid_argument(std::string(call) + ": inputs: an undefined tensor");
    if (inputs.dim() < 1) throw std::invalid_argument(std::string(call) + ": inputs: a scalar; expected [batch, ...]");
    const auto& expected = trainer->data_info().input_shape;
    if (!expected.empty() && inputs.sizes().slice(1).vec() != expected)
      throw std::invalid_argument(std::string(call) + ": inputs have shape " + c10::str(inputs.sizes()) +
                                  "; the model takes [batch, " +
                                  c10::str(c10::IntArrayRef(expected)).substr(1));
    if (inputs.scalar_type() == torch::kFloat) return inputs;
    if (inputs.scalar_type() == torch::kBool || inputs.is_complex())
      throw std::invalid_argument(std::string(call) + ": inputs: dtype " + std::string(c10::toString(inputs.scalar_type())) +
                                  " (expected a real number type)");
    return inputs.to(torch::kFloat);
  }

  // Targets as the loss takes them: class indices as int64, values as float32.
  torch::Tensor loss_targets(const torch::Tensor& targets, std::int64_t batch, const char* call) const {
    if (!targets.defined()) throw std::invalid_argument(std::string(call) + ": targets: an undefined tensor");
    if (targets.dim() < 1 || targets.size(0) != batch)
      throw std::invalid_argument(std::string(call) + ": targets have shape " + c10::str(targets.sizes()) +
                                  " for a batch of " + std::to_string(batch) + " inputs");
    torch::Tensor t = targets;
    const bool classify = trainer->loss().classification();
    if (classify) {
      if (!torch::isFloatingType(t.scalar_type()) && t.scalar_type() != torch::kLong) t = t.to(torch::kLong);
    } else if (t.scalar_type() != torch::kFloat) {
      t = t.to(torch::kFloat);
    }
    try {
      trainer->loss().check_targets(t, trainer->data_info(), call);
    } catch (const std::exception& e) {  // the caller's tensor, not the config, is wrong
      std::string why = first_line(e.what());
      const std::string as_dataset = "dataset: " + std::string(call) + " targets: ";  // the loss's words for a dataset
      if (why.rfind(as_dataset, 0) == 0) why.erase(0, as_dataset.size());
      throw std::invalid_argument(std::string(call) + ": targets: " + why + (classify ? regression_hint(t) : ""));
    }
    return t;
  }

  // Targets a classification loss refused that look like a regression's
  // (floating values, or not one class id per sample): the loss in force,
  // which a config without "loss" did not choose knowingly, and the fix.
  std::string regression_hint(const torch::Tensor& targets) const {
    if (!targets.is_floating_point() && targets.dim() == 1) return "";
    const std::string name = config.loss.record ? config.loss.record->name : "?";
    const bool by_default = name == schema_default(run_key::kLoss).value("plugin", "");
    return "; the loss in force is '" + name + "'" +
           (by_default ? " (the default when the config names no \"loss\")" : "") +
           ", a classification loss; for a regression set \"loss\": {\"plugin\": \"mse\"}";
  }

  // A train step, or an eval step recorded as valid values.
  StepResult step(const torch::Tensor& inputs, const torch::Tensor& targets, bool train) {
    const char* call = train ? "train_step" : "eval_step";
    check_usable(call);
    // On the run's device (a copy when the caller's tensors are elsewhere).
    const torch::Device device(trainer->run().device);
    const torch::Tensor x = model_inputs(inputs, call).to(device);
    const torch::Tensor y = loss_targets(targets, x.size(0), call).to(device);
    std::optional<Batch> batch;  // it refers to x and y
    fitted(call, [&] { batch.emplace(steps->step(x, y, train)); });
    return result_of(*batch);
  }

  // Runs a step; the config was checked when the session was made, so a
  // ConfigError now means the caller's tensors do not fit the model or loss.
  template <class Step>
  static void fitted(const char* call, Step&& step) {
    try {
      step();
    } catch (const ConfigError& e) {
      throw std::invalid_argument(std::string(call) + ": " + first_line(e.what()));
    }
  }

  // The values recorded for the batch just run (its row of the batch log).
  StepResult result_of(const Batch& batch) const {
    StepResult r;
    r.loss = batch.loss.item<double>();
    const BatchLog& log = trainer->history().batches();
    const auto& cells = log.cells();
    std::size_t first = cells.size();
    while (first > 0 && cells[first - 1].row + 1 == log.rows()) --first;
    for (std::size_t i = first; i < cells.size(); ++i) r.values.emplace_back(log.keys()[cells[i].key], cells[i].value);
    return r;
  }
};

Session::Session(const nlohmann::json& config, SessionOptions options)
    : impl_(std::make_unique<Impl>(config, std::move(options))) {}

Session::~Session() {
  if (!impl_) return;
  try {
    finish();
  } catch (...) {
    // A destructor reports nothing; call finish() to see its errors.
  }
}

Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&& other) noexcept {
  if (this != &other) {
    Session old(std::move(*this));  // finished by its destructor
    impl_ = std::move(other.impl_);
  }
  return *this;
}

Session::Impl& Session::live(const char* call) const {
  if (!impl_)
    throw std::logic_error(std::string(call) +
                           ": this skein::Session was moved from and holds no run; use the session it was moved to");
  return *impl_;
}

StepResult Session::train_step(const torch::Tensor& inputs, const torch::Tensor& targets) {
  return live("train_step").step(inputs, targets, true);
}

StepResult Session::eval_step(const torch::Tensor& inputs, const torch::Tensor& targets) {
  return live("eval_step").step(inputs, targets, false);
}

torch::Tensor Session::predict(const torch::Tensor& inputs) {
  Impl& s = live("predict");  // also after finish(): the trained model serves on
  const torch::Tensor out = s.trainer->predict(s.model_inputs(inputs, "predict"));
  return out;
}

bool Session::end_epoch() {
  Impl& s = live("end_epoch");
  s.check_usable("end_epoch");
  // An empty epoch would shift every later epoch's number (and the resume
  // point): a second end_epoch by mistake is refused, not recorded.
  if (!s.steps->epoch_open())
    throw std::logic_error("end_epoch: no step was taken in epoch " + std::to_string(s.trainer->epoch() + 1) +
                           " (no train_step or eval_step since the last end_epoch); an epoch needs at least one");
  // Micro-batches after the epoch's last complete accumulation group never
  // reached the optimizer (the next step's group starts afresh).
  const long left = s.steps->unapplied_steps(s.config.accumulate_steps);
  if (left != 0 && !s.warned_partial_group) {
    s.warned_partial_group = true;
    warn("end_epoch: the last " + std::to_string(left) + " train step(s) of epoch " +
         std::to_string(s.trainer->epoch()) + " did not complete a group of accumulate_steps=" +
         std::to_string(s.config.accumulate_steps) +
         ", so their gradients were not applied; feed a multiple of it per epoch, or set batches_per_epoch");
  }
  return s.steps->end_epoch();
}

void Session::save_checkpoint(const std::string& dir) {
  Impl& s = live("save_checkpoint");
  s.check_between_epochs("save_checkpoint");
  s.trainer->save_checkpoint(s.agreed_save_path(dir));
  // A save reported done is on disk, also with "checkpoint_background": a
  // program may leave with exit() and never destroy its session.
  s.trainer->finish_checkpoints();
}

void Session::load_checkpoint(const std::string& dir) {
  Impl& s = live("load_checkpoint");
  s.check_between_epochs("load_checkpoint");
  s.restore(checkpoint_load_path(s.run, dir));
}

void Session::finish() {
  Impl& s = live("finish");
  if (s.finished) return;
  s.finished = true;
  if (s.steps->began()) {
    s.steps->end_training();
    s.trainer->write_final_model();  // the model to export or predict with (main rank)
  }
  if (s.dir && s.trainer->epoch() > 0) s.dir->commit_new_run();
  if (s.trainer->epoch() > 0) check_integrity(*s.trainer, s.store);  // run.json: did the ranks agree?
  s.log.stream().flush();
}

TrainContext& Session::context() { return *live("context").trainer; }
const std::string& Session::run_dir() const { return live("run_dir").run.run_dir; }
long Session::epoch() const {
  const Impl& s = live("epoch");
  return s.trainer->epoch() - (s.steps->epoch_open() ? 1 : 0);
}

}  // namespace skein
