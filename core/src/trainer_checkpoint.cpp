// Checkpoints: what a Trainer writes and how it resumes.
//
// A checkpoint is a directory:
//   model.pt              torch::save of the model (parameters and buffers by name)
//   model_state_dict.pt   the same as a dict {name: tensor} by torch::pickle_save,
//                         which Python's torch.load reads as a state dict
//   optimizer.pt          the optimizer's state (momentum buffers, steps, lr)
//   history.json          the history up to and including the epoch
//   rng.pt                every rank's CPU generator state, by rank
//   trainer.json          format, epoch, world size, seed, learning rates, each
//                         callback's state; written last
// It is written into a temporary directory beside its final place, every
// file fsynced, then renamed into place (a directory renamed as a whole).
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <boost/filesystem.hpp>
#include <torch/serialize.h>

#include "skein/atomic_file.hpp"
#include "skein/core/checkpoint_meta.hpp"
#include "skein/core/trainer.hpp"

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

void fsync_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// Test hook (see tests/test_checkpoint.cpp): die halfway through writing the
// checkpoint of this epoch, as a kill -9 would.
void maybe_crash_for_test(long epoch) {
  const char* at = std::getenv("SKEIN_TEST_CRASH_IN_CHECKPOINT");
  if (at && std::atol(at) == epoch) std::_Exit(86);
}

// Renames the complete directory `tmp` to root/name, replacing a checkpoint of
// that name (e.g. "best") as a whole.
void install_checkpoint(const fs::path& root, const fs::path& tmp, const std::string& name) {
  const fs::path final_dir = root / name;
  const fs::path old = root / (".old-" + name + "-" + std::to_string(::getpid()));
  if (fs::exists(final_dir)) fs::rename(final_dir, old);
  fs::rename(tmp, final_dir);
  fsync_path(root.string(), O_RDONLY | O_DIRECTORY);
  fs::remove_all(old);
}

}  // namespace

std::string find_latest_checkpoint(const std::string& root) {
  boost::system::error_code ec;
  std::string best;
  long best_epoch = -1;
  if (!fs::is_directory(root, ec)) return "";
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("epoch_", 0) != 0 || !fs::exists(it->path() / "trainer.json")) continue;
    try {
      auto meta = nlohmann::json::parse(std::ifstream((it->path() / "trainer.json").string()));
      const auto epoch = checkpoint_epoch(meta);
      if (epoch && *epoch > best_epoch) {
        best_epoch = *epoch;
        best = it->path().string();
      }
    } catch (const std::exception&) {
      // An unreadable trainer.json: not a complete checkpoint.
    }
  }
  return best;
}

void Trainer::write_checkpoint(const std::string& name) {
  // Every rank's generator state reaches rank 0 through the run's store.
  std::vector<torch::Tensor> rng_states;
  const torch::Tensor mine = at::detail::getDefaultCPUGenerator().get_state();
  if (run_.world_size > 1) {
    const std::string prefix = "skein/ckpt/" + run_.run_id + "/" + name + "/" +
                               std::to_string(epoch_) + "/rng/";
    store_set(*store_->store, prefix + std::to_string(run_.rank), bytes_of(mine));
    if (run_.is_main()) {
      for (int r = 0; r < run_.world_size; ++r) {
        rng_states.push_back(r == 0 ? mine : tensor_of(store_get(*store_->store, prefix + std::to_string(r))));
        if (r > 0) store_->store->deleteKey(prefix + std::to_string(r));
      }
      store_->store->deleteKey(prefix + "0");
    }
  } else {
    rng_states.push_back(mine);
  }
  if (!run_.is_main()) return;

  const fs::path root(checkpoint_root());
  fs::create_directories(root);
  const fs::path tmp = root / (".tmp-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  auto put = [&](const char* file, const std::string& bytes) {
    write_file_atomic((tmp / file).string(), bytes);
  };
  {
    std::ostringstream out;
    torch::save(model_, out);
    put("model.pt", out.str());
  }
  {
    c10::Dict<std::string, torch::Tensor> dict;
    for (const auto& p : model_->named_parameters()) dict.insert(p.key(), p.value().detach());
    for (const auto& b : model_->named_buffers()) dict.insert(b.key(), b.value().detach());
    const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
    put("model_state_dict.pt", std::string(bytes.begin(), bytes.end()));
  }
  maybe_crash_for_test(epoch_);
  {
    torch::serialize::OutputArchive archive;
    optimizer_->save(archive);
    std::ostringstream out;
    archive.save_to(out);
    put("optimizer.pt", out.str());
  }
  put("history.json", history_.dump() + "\n");
  {
    std::ostringstream out;
    torch::save(rng_states, out);
    put("rng.pt", out.str());
  }
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
                         {"callbacks", callbacks}};
  put("trainer.json", encode_nonfinite(meta).dump(2) + "\n");
  fsync_path(tmp.string(), O_RDONLY | O_DIRECTORY);

  install_checkpoint(root, tmp, name);
}

// Files of a checkpoint are never modified after they are written, so another
// checkpoint of the same state can share them.
void Trainer::link_checkpoint(const std::string& from, const std::string& name) {
  const fs::path root(checkpoint_root());
  const fs::path tmp = root / (".tmp-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  for (fs::directory_iterator it(root / from), end; it != end; ++it)
    fs::create_hard_link(it->path(), tmp / it->path().filename());
  fsync_path(tmp.string(), O_RDONLY | O_DIRECTORY);
  install_checkpoint(root, tmp, name);
}

void Trainer::resume(const std::string& dir) {
  const std::string where = "checkpoint " + dir;
  std::string text;
  {
    std::ifstream in(dir + "/trainer.json", std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();  // empty when missing: then "unreadable" like any bad JSON
  }
  const CheckpointMeta meta = parse_checkpoint_meta(text, where);
  const int world = meta.world_size;
  if (world != run_.world_size)
    throw ConfigError(where + " was written by " + std::to_string(world) + " ranks; this run has " +
                      std::to_string(run_.world_size) +
                      " (resume with the same number of processes)");
  try {
    torch::NoGradGuard no_grad;
    std::ifstream model_in(dir + "/model.pt", std::ios::binary);
    torch::load(model_, model_in);
    torch::serialize::InputArchive archive;
    archive.load_from(dir + "/optimizer.pt");
    optimizer_->load(archive);
    const auto& lrs = meta.lr;
    auto& groups = optimizer_->param_groups();
    if (lrs.size() != groups.size()) throw std::runtime_error("the optimizer has another number of parameter groups");
    for (std::size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
    std::vector<torch::Tensor> rng;
    torch::load(rng, dir + "/rng.pt");
    if (static_cast<int>(rng.size()) != run_.world_size) throw std::runtime_error("rng.pt holds the wrong number of ranks");
    history_ = History::load(dir + "/history.json");
    intern_batch_keys();
    at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle to the global one
    generator.set_state(rng[static_cast<std::size_t>(run_.rank)]);
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    throw ConfigError(where + " does not fit this run: " + first_line(e.what()));
  }
  // Callback states, matched by position and plugin name.
  const auto& states = meta.callbacks;
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
  epoch_ = meta.epoch;
  start_epoch_ = epoch_ + 1;
}

}  // namespace skein::core
