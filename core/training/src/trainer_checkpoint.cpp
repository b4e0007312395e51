// Checkpoints: what a Trainer writes and how it resumes.
//
// A checkpoint is a directory:
//   model.pt              torch::save of the model (parameters and buffers by name)
//   model_state_dict.pt   the same as a plain dict {name: tensor}, which Python's
//                         torch.load(..., weights_only=True) reads as a state dict
//   optimizer.pt          the optimizer's state (momentum buffers, steps, lr)
//   history.json          the history up to and including the epoch
//   rng.pt                every rank's CPU generator state, by rank
//   parallel.pt           every rank's parallel-wrapper state, by rank (only
//                         for a wrapper that keeps one: ddp's PowerSGD)
//   open_epoch.json       only in a checkpoint written inside an epoch: each
//                         rank's values of the open epoch so far, callback
//                         states (a scoring callback's sums) and elapsed time
//   open_epoch.pt         ... and each rank's batch records (BatchLog bytes)
//   trainer.json          format, epoch, world size, seed, learning rates, each
//                         callback's state, a TorchScript model's file and its
//                         SHA-256; inside an epoch "open_epoch" (the next
//                         batch, the batching); written last
// It is written into a temporary directory beside its final place, every
// file fsynced, then renamed into place (a directory renamed as a whole).
// checkpoints/final, the model a run ended with, holds only model.pt,
// model_state_dict.pt and trainer.json ("model_only": true).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iterator>
#include <functional>
#include <fstream>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <boost/filesystem.hpp>
#include <torch/serialize.h>

#include "skein/kit/atomic_file.hpp"
#include "skein/core/checkpoint_dir.hpp"
#include "skein/core/checkpoint_meta.hpp"
#include "skein/core/digest.hpp"
#include "skein/core/fault_point.hpp"
#include "skein/core/script_pin.hpp"
#include "skein/core/state_dict_io.hpp"
#include "skein/core/trainer.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/kit/input_file.hpp"
#include "skein/kit/store.hpp"
#include "skein/run.hpp"
#include "skein/core/store_keys.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

namespace {

std::string bytes_of(const torch::Tensor& t) {
  auto c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

torch::Tensor tensor_of(const std::string& bytes) {
  return torch::from_blob(const_cast<char*>(bytes.data()), {static_cast<std::int64_t>(bytes.size())},
                          torch::kUInt8)
      .clone();
}

// torch::save writes some names (a submodule called like a TorchScript
// keyword, say) that torch::load then cannot parse: found now, not at resume.
void check_readable(const std::string& bytes, const char* file, const std::string& checkpoint) {
  std::istringstream in(bytes);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(in);
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint '" + checkpoint + "': " + file +
                             " was written but cannot be read back, so it would not resume (a parameter, "
                             "buffer or submodule name torch cannot store, such as a TorchScript keyword?): " +
                             first_line(e.what()));
  }
}

// One step of writing a checkpoint (a file written, a directory synced, a
// rename, a link): where the crash tests kill the process.
void checkpoint_step() { skein_fault_point("checkpoint.step", 0); }

// Renames the complete directory `tmp` to root/name, replacing a checkpoint of
// that name (e.g. "best") as a whole.
void install_checkpoint(const fs::path& root, const fs::path& tmp, const std::string& name) {
  const fs::path final_dir = root / name;
  const fs::path old = root / (".old-" + name + "-" + std::to_string(::getpid()));
  if (fs::exists(final_dir)) {
    fs::rename(final_dir, old);
    checkpoint_step();
  }
  fs::rename(tmp, final_dir);
  checkpoint_step();
  fsync_path(root.string(), O_RDONLY | O_DIRECTORY);
  fs::remove_all(old);
  checkpoint_step();
}

}  // namespace

std::vector<std::string> Trainer::gather_on_main(const std::string& name, const std::string& part,
                                                 std::string mine) {
  if (run_.world_size == 1) return {std::move(mine)};
  auto key = [&](int rank) { return store_key::checkpoint_part(run_.run_id, name, epoch_, part, rank); };
  store_set(*store_->store, key(run_.rank), mine);
  if (!run_.is_main()) return {};
  std::vector<std::string> all;
  for (int r = 0; r < run_.world_size; ++r) {
    all.push_back(r == 0 ? std::move(mine) : store_get(*store_->store, key(r)));
    if (r > 0) store_->store->deleteKey(key(r));
  }
  store_->store->deleteKey(key(0));
  return all;
}

// trainer.json: what the tensors files do not say, and their checksums.
nlohmann::json Trainer::checkpoint_meta(const nlohmann::json& checksums) const {
  nlohmann::json callbacks = nlohmann::json::array();
  for (std::size_t i = 0; i < callbacks_.size(); ++i)
    callbacks.push_back({{"plugin", config_.callbacks[i].record->name}, {"state", callbacks_[i]->state()}});
  // libtorch's optimizer archive does not bring back a changed learning rate.
  nlohmann::json lrs = nlohmann::json::array();
  for (auto& group : optimizer_->param_groups()) lrs.push_back(group.options().get_lr());
  nlohmann::json meta = {{"format", kCheckpointFormat},
                         {"epoch", epoch_},
                         {"lr", lrs},
                         {"world_size", run_.world_size},
                         {"seed", config_.seed},
                         {"model", config_.model.record->name},
                         {"data_info", {{"input_shape", data_info_.input_shape}, {"num_classes", data_info_.num_classes}}},
                         {"callbacks", callbacks},
                         {"files", checksums}};
  if (auto script = script_pin(*model_); !script.is_null()) meta["script"] = script;
  if (input_scaling_.active()) meta["input_scaling"] = input_scaling_.to_json();
  if (epoch_open_) {
    meta["epoch"] = epoch_ - 1;
    meta["open_epoch"] = {{"epoch", epoch_},
                          {"next_batch", epoch_batches_},
                          {"train_samples", train_.size()},
                          {"batch_size", config_.batch_size},
                          {"accumulate_steps", config_.accumulate_steps}};
  }
  return meta;
}

nlohmann::json Trainer::open_epoch_part() const {
  nlohmann::json record = history_.last();
  record.erase(history_key::kBatches);
  nlohmann::json callbacks = nlohmann::json::array();
  for (std::size_t i = 0; i < callbacks_.size(); ++i)
    callbacks.push_back({{"plugin", config_.callbacks[i].record->name}, {"state", callbacks_[i]->state()}});
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - epoch_started_;
  return {{"record", record}, {"callbacks", callbacks}, {"seconds", seconds.count()}};
}

void Trainer::write_checkpoint(const std::string& name) { write_checkpoint_in(checkpoint_root(), name); }

void Trainer::save_checkpoint(const std::string& dir) {
  const fs::path path = fs::absolute(dir).lexically_normal();
  const std::string name = path.filename().string();
  if (name.empty() || name == "." || name == ".." || name[0] == '.')
    throw ConfigError("save_checkpoint: '" + dir + "' does not end in a checkpoint directory name");
  write_checkpoint_in(path.parent_path().string(), name);
  parallel_->barrier();
}

void Trainer::write_checkpoint_in(const std::string& root_dir, const std::string& name,
                                  const CheckpointParts& parts) {
  // Collectives: every rank takes part. A resumed run continues each rank's
  // random stream, and the wrapper's state (e.g. PowerSGD's error feedback).
  std::vector<torch::Tensor> rng_states;
  if (!parts.model_only)
    for (const auto& bytes : gather_on_main(name, "rng", bytes_of(at::detail::getDefaultCPUGenerator().get_state())))
      rng_states.push_back(tensor_of(bytes));
  // Inside an epoch: every rank's records and callback states of the epoch so far.
  const bool open = epoch_open_ && !parts.model_only;
  std::vector<torch::Tensor> open_batches;
  nlohmann::json open_ranks = nlohmann::json::array();
  if (open) {
    for (const auto& bytes : gather_on_main(name, "open_batches", history_.batches().to_bytes()))
      open_batches.push_back(tensor_of(bytes));
    for (const auto& text : gather_on_main(name, "open_part", encode_nonfinite(open_epoch_part()).dump()))
      open_ranks.push_back(nlohmann::json::parse(text));
  }
  std::vector<torch::Tensor> parallel_states;
  auto* stateful = parts.model_only ? nullptr : dynamic_cast<ParallelState*>(parallel_.get());
  if (stateful) {
    bool any = false;
    for (const auto& bytes : gather_on_main(name, "parallel", stateful->state())) {
      parallel_states.push_back(tensor_of(bytes));
      any = any || !bytes.empty();
    }
    if (!any) parallel_states.clear();
  }
  if (!run_.is_main()) return;

  const fs::path root(root_dir);
  fs::create_directories(root);
  if (root_dir == checkpoint_root())
    run_files::record(run_, std::string(run_files::kCheckpoints) + "/" + name);  // listed before it exists: --overwrite finds it
  const fs::path tmp = root / (".tmp-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  nlohmann::json checksums = nlohmann::json::object();  // verified on resume
  auto put = [&](const char* file, const std::string& bytes) {
    write_file_atomic((tmp / file).string(), bytes);
    checksums[file] = crc64_hex(bytes);
    checkpoint_step();
  };
  auto serialized = [](const auto& save) {
    std::ostringstream out;
    save(out);
    return out.str();
  };
  const std::string model_bytes = serialized([&](std::ostream& out) { torch::save(model_, out); });
  check_readable(model_bytes, checkpoint_files::kModel, name);
  put(checkpoint_files::kModel, model_bytes);
  put(checkpoint_files::kStateDict, state_dict_bytes(*model_));
  skein_fault_point("checkpoint.halfway", epoch_);
  if (!parts.model_only) {
    put(checkpoint_files::kOptimizer, serialized([&](std::ostream& out) {
          torch::serialize::OutputArchive archive;
          optimizer_->save(archive);
          archive.save_to(out);
        }));
    if (open) {
      nlohmann::json complete = history_.epochs();
      complete.erase(complete.size() - 1);
      put(checkpoint_files::kHistory, History::from_json(complete).dump() + "\n");
      put(checkpoint_files::kOpenEpochParts, nlohmann::json{{"ranks", open_ranks}}.dump() + "\n");
      put(checkpoint_files::kOpenEpochBatches, serialized([&](std::ostream& out) { torch::save(open_batches, out); }));
    } else {
      put(checkpoint_files::kHistory, history_.dump() + "\n");
    }
    put(checkpoint_files::kRng, serialized([&](std::ostream& out) { torch::save(rng_states, out); }));
    if (!parallel_states.empty())
      put(checkpoint_files::kParallel, serialized([&](std::ostream& out) { torch::save(parallel_states, out); }));
  }
  nlohmann::json meta = checkpoint_meta(checksums);
  if (parts.epoch >= 0) meta["epoch"] = parts.epoch;
  if (parts.model_only) meta["model_only"] = true;
  put(checkpoint_files::kMeta, encode_nonfinite(meta).dump(2) + "\n");  // last: marks it complete
  fsync_path(tmp.string(), O_RDONLY | O_DIRECTORY);
  checkpoint_step();

  install_checkpoint(root, tmp, name);
}

// Files of a checkpoint are never modified after they are written, so another
// checkpoint of the same state can share them.
void Trainer::link_checkpoint(const std::string& from, const std::string& name) {
  const fs::path root(checkpoint_root());
  run_files::record(run_, std::string(run_files::kCheckpoints) + "/" + name);
  const fs::path tmp = root / (".tmp-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  for (fs::directory_iterator it(root / from), end; it != end; ++it) {
    fs::create_hard_link(it->path(), tmp / it->path().filename());
    checkpoint_step();
  }
  fsync_path(tmp.string(), O_RDONLY | O_DIRECTORY);
  install_checkpoint(root, tmp, name);
}

namespace {

// Runs `load`, naming `file` of the checkpoint when it fails.
void load_part(const std::string& where, const char* file, const std::function<void()>& load) {
  try {
    load();
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    throw ConfigError(where + "/" + file + " does not fit this run: " + first_line(e.what()));
  }
}

}  // namespace

// torch::load gives a parameter the checkpoint's shape, whatever the model's:
// a model of another shape must be refused, not reshaped.
void Trainer::restore_model(const std::string& file) {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> shapes;
  for (const auto& p : model_->named_parameters()) shapes.emplace_back(p.key(), p.value().sizes().vec());
  for (const auto& b : model_->named_buffers()) shapes.emplace_back(b.key(), b.value().sizes().vec());
  std::ifstream model_in(file, std::ios::binary);
  torch::load(model_, model_in);
  auto loaded = model_->named_parameters();
  auto buffers = model_->named_buffers();
  for (const auto& [name, shape] : shapes) {
    const torch::Tensor* t = loaded.find(name);
    if (!t) t = buffers.find(name);
    if (t && t->sizes().vec() != shape)
      throw std::runtime_error("'" + name + "' has shape " + c10::str(t->sizes()) + " there and " +
                               c10::str(c10::IntArrayRef(shape)) + " in this model");
  }
}

void Trainer::restore_optimizer(const std::string& file, const std::vector<double>& lrs) {
  torch::serialize::InputArchive archive;
  archive.load_from(file);
  optimizer_->load(archive);
  auto& groups = optimizer_->param_groups();
  if (lrs.size() != groups.size()) throw std::runtime_error("the optimizer has another number of parameter groups");
  for (std::size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
}

void Trainer::restore_rng(const std::string& file) {
  std::vector<torch::Tensor> rng;
  torch::load(rng, file);
  if (static_cast<int>(rng.size()) != run_.world_size)
    throw std::runtime_error("it holds the states of another number of ranks");
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle to the global one
  generator.set_state(rng[static_cast<std::size_t>(run_.rank)]);
}

// Rank r's bytes go back to rank r's wrapper. A checkpoint without the file
// (a wrapper that kept no state then) leaves the wrapper's fresh state.
void Trainer::restore_parallel_state(const std::string& file) {
  auto* stateful = dynamic_cast<ParallelState*>(parallel_.get());
  if (!stateful || !fs::exists(file)) return;
  std::vector<torch::Tensor> states;
  torch::load(states, file);
  if (static_cast<int>(states.size()) != run_.world_size)
    throw std::runtime_error("it holds the states of another number of ranks");
  const auto& mine = states[static_cast<std::size_t>(run_.rank)];
  if (mine.scalar_type() != torch::kUInt8 || mine.dim() != 1) throw std::runtime_error("it is not a list of byte tensors");
  stateful->load_state(bytes_of(mine));
}

// Callback states, matched by position and plugin name.
void Trainer::restore_callbacks(const std::vector<CheckpointMeta::CallbackState>& states, const std::string& where) {
  for (std::size_t i = 0; i < callbacks_.size() && i < states.size(); ++i) {
    const std::string& name = config_.callbacks[i].record->name;
    if (states[i].plugin != name || states[i].state.is_null()) continue;
    try {
      callbacks_[i]->load_state(states[i].state);
    } catch (const ConfigError&) {
      throw;
    } catch (const std::exception& e) {
      throw ConfigError(where + ": the state of callback '" + name + "' does not fit: " + first_line(e.what()));
    }
  }
}

void Trainer::resume(const std::string& dir) {
  const std::string where = "checkpoint " + dir;
  const CheckpointMeta meta = read_checked_checkpoint(dir);
  if (meta.world_size != run_.world_size)
    throw ConfigError(where + " was written by " + std::to_string(meta.world_size) + " ranks; this run has " +
                      std::to_string(run_.world_size) + " (resume with the same number of processes)");
  check_script_unchanged(*model_, meta, where);
  torch::NoGradGuard no_grad;
  load_part(where, checkpoint_files::kModel, [&] { restore_model(dir + "/" + checkpoint_files::kModel); });
  load_part(where, checkpoint_files::kOptimizer, [&] { restore_optimizer(dir + "/" + checkpoint_files::kOptimizer, meta.lr); });
  load_part(where, checkpoint_files::kRng, [&] { restore_rng(dir + "/" + checkpoint_files::kRng); });
  load_part(where, checkpoint_files::kParallel, [&] { restore_parallel_state(dir + "/" + checkpoint_files::kParallel); });
  load_part(where, checkpoint_files::kHistory, [&] {
    history_ = History::load(dir + "/" + checkpoint_files::kHistory);
    intern_batch_keys();
  });
  if (meta.open_epoch) {
    restore_open_epoch(meta, dir);  // with this rank's callback states
  } else {
    restore_callbacks(meta.callbacks, where);
  }
  epoch_ = meta.epoch;
  start_epoch_ = epoch_ + 1;
}

// A checkpoint written inside an epoch continues at the same sample only
// when the epoch is cut into the same batches.
void Trainer::restore_open_epoch(const CheckpointMeta& meta, const std::string& dir) {
  const std::string where = "checkpoint " + dir;
  if (!data_) {  // a session fed by its program: it refuses the checkpoint (resumes_mid_epoch)
    reopen_ = OpenEpoch{};
    return;
  }
  const CheckpointMeta::OpenEpoch& o = *meta.open_epoch;
  auto differs = [&](const char* what, long long then, long long now) {
    if (then != now)
      throw ConfigError(where + " was written inside epoch " + std::to_string(meta.epoch + 1) + " with " + what +
                        " " + std::to_string(then) + "; this run has " + std::to_string(now) +
                        " (continuing inside an epoch needs the same batches; remove " + dir +
                        " to resume from the newest checkpoint before it)");
  };
  differs("training samples", o.train_samples, train_.size());
  differs("batch_size", o.batch_size, config_.batch_size);
  differs("accumulate_steps", o.accumulate_steps, config_.accumulate_steps);
  if (o.next_batch > batches_per_epoch_)
    throw ConfigError(where + ": bad trainer.json: next_batch " + std::to_string(o.next_batch) + " of an epoch of " +
                      std::to_string(batches_per_epoch_) + " batches");
  OpenEpoch open;
  open.next_batch = o.next_batch;
  load_part(where, checkpoint_files::kOpenEpochParts, [&] {
    const auto text = read_whole_file(dir + "/" + checkpoint_files::kOpenEpochParts);
    if (!text) throw std::runtime_error(where + ": cannot read " + checkpoint_files::kOpenEpochParts);
    OpenEpochRank mine = parse_open_epoch_rank(*text, run_.rank, where);
    open.record = std::move(mine.record);
    open.seconds = mine.seconds;
    restore_callbacks(mine.callbacks, where);
  });
  load_part(where, checkpoint_files::kOpenEpochBatches, [&] {
    std::vector<torch::Tensor> logs;
    torch::load(logs, dir + "/" + checkpoint_files::kOpenEpochBatches);
    if (static_cast<int>(logs.size()) != run_.world_size)
      throw std::runtime_error("it holds the records of another number of ranks");
    open.batches = bytes_of(logs[static_cast<std::size_t>(run_.rank)]);
    BatchLog::from_bytes(open.batches);  // throws now, not when the epoch reopens
  });
  reopen_ = std::move(open);
}

}  // namespace skein::core
