#pragma once
// skein::Session: train a Skein model inside your own program, one batch at a
// time, with the same config, plugins, callbacks, history sync and
// checkpoints as `skein train` (which runs its epochs through the same steps).
//
//   skein::Session s("surrogate.json");          // or an nlohmann::json object
//   for (long epoch = 0; epoch < 20; ++epoch) {
//     for (...) s.train_step(x, y);              // your tensors: [batch, ...]
//     s.eval_step(vx, vy);                       // optional: recorded as valid_*
//     if (s.end_epoch()) break;                  // a callback asked to stop
//   }
//   torch::Tensor y = s.predict(x);
//
// CMake: find_package(Skein) and target_link_libraries(app PRIVATE skein::session).
// C and Fortran programs use skein/skein.h and the skein Fortran module.
//
// Threads: a Session is used by one thread at a time (calls on one session
// must not overlap). Sessions share nothing of their own, but libtorch's
// process-wide state is shared: the global random generator (each session
// seeds it from its config when created) and its thread pools.
// Distributed: each process of a launcher (torchrun, mpirun, srun, or
// RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set by hand; skein train
// --nproc-per-node starts skein train workers only, not a program of yours)
// opens its session the same way; train_step, end_epoch and save_checkpoint
// are then collectives: every rank calls them equally often.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "skein/context.hpp"
#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"

namespace skein {

struct SessionOptions {
  // The run directory (config.json, train.log, history.json, checkpoints/,
  // the callbacks' outputs). Empty: a new one under runs/, as skein train.
  std::string run_dir;
  // Replace a finished run already in run_dir (its outputs are set aside
  // until this session completes an epoch, as with skein train --overwrite).
  bool overwrite = false;
  // Continue the run in this directory (run_dir is then ignored) from its
  // newest complete checkpoint, as skein train --resume: the one furthest
  // into training among the checkpoint callback's epoch_* and those
  // save_checkpoint wrote by name into RUN/checkpoints/ (never final or
  // best; on a tie the callback's). The config comes from the run's
  // config.json: pass a null config (or an empty object).
  std::string resume;
  // Plugin directories scanned after the default ones (lib/skein/plugins
  // next to libskein_core, and SKEIN_PLUGIN_PATH).
  std::vector<std::string> plugin_dirs;
  // Train steps per epoch, when known: progress bars show it, and the
  // epoch's last gradient-accumulation group is shortened as in skein train.
  long batches_per_epoch = 0;
  // Echo the run's log (epoch table, ...) to stdout on rank 0; train.log gets it either way.
  bool echo_log = true;
  // Let save_checkpoint write outside the run directory (skein train's
  // --allow-outside-run-dir; SKEIN_ALLOW_OUTSIDE_RUN_DIR=1 in the
  // environment does the same). Even then it replaces nothing but a
  // checkpoint (or an empty directory).
  bool allow_outside_run_dir = false;
};

// What one step recorded: the batch's loss and every value recorded for it
// (train_loss, train_acc, ... or valid_*), in the order they were recorded.
struct StepResult {
  double loss = 0;
  std::vector<std::pair<std::string, double>> values;
};

class SKEIN_EXPORT Session {
 public:
  // `config`: the JSON of skein train (an object), or a string naming its
  // file. Without "data", it needs "data_info": {"input_shape": [...],
  // "num_classes": N} (N: classes, or the output width of a regression).
  // Throws skein::ConfigError / PluginError / std::runtime_error with one line
  // naming the culprit; nothing is left in the run directory then.
  explicit Session(const nlohmann::json& config, SessionOptions options = {});
  ~Session();  // finish(), errors swallowed
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  // A session moved from holds no run: any call on it but assignment and
  // destruction throws std::logic_error ("train_step: this skein::Session
  // was moved from ...").
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Forward, loss, backward, gradient sync (ddp), optimizer step at the end
  // of each accumulation group (accumulate_steps). Opens an epoch when none is
  // open. Inputs are [batch, input_shape...]; they are used in place when
  // they already have the model's dtype (float32), else converted. Targets:
  // class indices (any integer type) or values (any floating type). Tensors
  // on another device than the run's (the config's "device") are copied there.
  StepResult train_step(const torch::Tensor& inputs, const torch::Tensor& targets);
  // Loss and the loss's values without gradients, recorded as valid_*.
  StepResult eval_step(const torch::Tensor& inputs, const torch::Tensor& targets);
  // The model's outputs in eval mode, without gradients (after finish() too),
  // on the run's device.
  torch::Tensor predict(const torch::Tensor& inputs);
  // Closes the epoch: history sync across ranks, epoch summary, on_epoch_end
  // callbacks, history.json, requested checkpoints. Returns whether a callback
  // (early stopping, say) asked to stop; every rank gets the same answer.
  // An epoch without a step (no train_step or eval_step since the last
  // end_epoch) is refused (std::logic_error, "no step was taken in epoch
  // N"): an empty epoch would shift every later epoch's number.
  bool end_epoch();
  // A checkpoint in skein train's format (skein train --resume and skein
  // export read it) at `dir`; between epochs only. A collective. A relative
  // `dir` is a name in the run's checkpoints/ ("mine": RUN_DIR/checkpoints/
  // mine). Refused (std::invalid_argument, one line naming `dir`): "", the
  // run directory and those above it, the run's own files (checkpoints/
  // itself, config.json, ...), a path outside the run directory unless
  // allow_outside_run_dir, and anything already at `dir` but a checkpoint
  // or an empty directory (a checkpoint is replaced as a whole; nothing
  // skein did not write is ever removed). On several ranks, every rank must
  // pass the same `dir`: the ranks compare them first (through the run's
  // store, within its timeout) and ranks that differ, or a `dir` rank 0
  // refuses, are std::invalid_argument on every rank, naming each rank's.
  // When it returns the checkpoint is whole on disk, whatever the config's
  // "checkpoint_background".
  void save_checkpoint(const std::string& dir);
  // Restores model, optimizer, history, random state and callback states;
  // the next step opens the epoch after the checkpoint's. Between epochs
  // only. A relative `dir` is a name in the run's checkpoints/, as for
  // save_checkpoint. Every file is checked first: a checkpoint that does not
  // fit (another model, world size, a damaged file) is refused with the
  // session as it was. A run's `final` holds the model only and is refused:
  // it is for skein export and predict, or a new run's "init_from".
  void load_checkpoint(const std::string& dir);
  // on_train_end of every callback (early stopping may restore the best
  // parameters), history backend closed, the model of the last complete
  // epoch written to RUN_DIR/checkpoints/final (for skein export and
  // predict). Later steps are errors.
  void finish();

  // What callbacks see: history, model, optimizer, run, log.
  TrainContext& context();
  History& history() { return context().history(); }
  // The user's model by its own type, whatever the parallel wrapper.
  template <class T>
  T& model() {
    return context().model<T>();
  }
  const std::string& run_dir() const;
  // The last epoch closed by end_epoch (0 before the first).
  long epoch() const;

 private:
  struct Impl;
  // The run, or std::logic_error "CALL: this skein::Session was moved from
  // ..." for a session moved from (every call but the destructor and
  // assignment, which make it usable again).
  Impl& live(const char* call) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace skein
