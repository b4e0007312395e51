// Checkpoints: how the engine writes them (checkpoint_restore.cpp reads them).
//
// A checkpoint is a directory:
//   model.pt              torch::save of the model (parameters and buffers by name)
//   model_state_dict.pt   the same as a plain dict {name: tensor}, which Python's
//                         torch.load(..., weights_only=True) reads as a state dict
//   optimizer.pt          the optimizer's state (momentum buffers, steps, lr);
//                         a sharded optimizer's consolidated from every rank
//                         (optimizer_shards.hpp): the same file as unsharded
//   history.json          the history up to and including the epoch
//   rng.pt                every rank's CPU generator state, by rank
//   rng_cuda.pt           every rank's CUDA generator state (runs on CUDA; an
//                         empty tensor for a rank on the CPU)
//   parallel.pt           every rank's parallel-wrapper state, by rank (only
//                         for a wrapper that keeps one: ddp's PowerSGD)
//   open_epoch.json       only in a checkpoint written inside an epoch: each
//                         rank's values of the open epoch so far, callback
//                         states (a scoring callback's sums) and elapsed time
//   open_epoch.pt         ... and each rank's batch records (BatchLog bytes)
//   trainer.json          format, epoch, world size, seed, learning rates, each
//                         callback's state, a TorchScript model's file and its
//                         SHA-256; inside an epoch "open_epoch" (the next
//                         batch, the batching, the pass segments that led
//                         there: one per world size a resume continued it
//                         on); written last
// It is written into a temporary directory beside its final place, every
// file fsynced, then renamed into place (a directory renamed as a whole).
// checkpoints/final, the model a run ended with, holds only model.pt,
// model_state_dict.pt and trainer.json ("model_only": true).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <streambuf>

#include <ATen/CPUGeneratorImpl.h>
#include <boost/filesystem.hpp>
#include <torch/serialize.h>

#include "skein/training/checkpoint/checkpoint_dir.hpp"
#include "skein/training/checkpoint/checkpoint_meta.hpp"
#include "skein/training/data/data_scaling.hpp"
#include "skein/training/checkpoint/digest.hpp"
#include "skein/training/checkpoint/fault_point.hpp"
#include "skein/training/engine/optimizer_shards.hpp"
#include "skein/training/checkpoint/script_pin.hpp"
#include "skein/training/checkpoint/state_dict_io.hpp"
#include "skein/training/device/device.hpp"
#include "skein/training/store/store_keys.hpp"
#include "skein/training/store/store_stream.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/errors.hpp"
#include "skein/io/atomic_file.hpp"
#include "skein/io/store.hpp"
#include "skein/training/engine/checkpoint_writer.hpp"
#include "skein/training/device/tensor_bytes.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

namespace {

// Module::save's layout of `module` (its parameters, buffers and
// serializable children, by name), every tensor an empty one of its dtype.
void write_skeleton(const torch::nn::Module& module, torch::serialize::OutputArchive& archive) {
  auto empty_like = [](const torch::Tensor& t) {
    auto e = torch::empty({0}, torch::dtype(t.scalar_type()));
    return t.requires_grad() ? e.requires_grad_() : e;
  };
  for (const auto& p : module.named_parameters(/*recurse=*/false)) archive.write(p.key(), empty_like(p.value()));
  for (const auto& b : module.named_buffers(/*recurse=*/false))
    archive.write(b.key(), empty_like(b.value()), /*is_buffer=*/true);
  for (const auto& child : module.named_children()) {
    if (!child.value()->is_serializable()) continue;
    torch::serialize::OutputArchive archive_of_child(archive.compilation_unit());
    write_skeleton(*child.value(), archive_of_child);
    archive.write(child.key(), archive_of_child);
  }
}

// torch::save writes some names (a submodule called like a TorchScript
// keyword, say) that torch::load then cannot parse: found before anything is
// written, not at resume. Whether torch::load parses a model depends on its
// names only, so the check loads a skeleton of it, not the model again
// (which would hold a second copy of every parameter on rank 0).
void check_names_storable(const torch::nn::Module& model, const std::string& checkpoint) {
  torch::serialize::OutputArchive skeleton;
  write_skeleton(model, skeleton);
  std::stringstream bytes;
  skeleton.save_to(bytes);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(bytes);
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint '" + checkpoint + "': " + checkpoint_files::kModel +
                             " could not be read back once written, so it would not resume (a parameter, "
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
  // A name cut to fit (one of over 242 bytes) comes back cut if a crash
  // falls between the two renames (remove_partial_checkpoints).
  const fs::path old = root / fitting_name(".old-", name, "-" + std::to_string(::getpid()));
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

// A checkpoint is one directory right under root(); names starting with '.'
// are skein's own (half-written .tmp-*, replaced .old-*).
void check_checkpoint_name(const std::string& name, const char* what) {
  if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos || name.find('\0') != std::string::npos)
    throw ConfigError(std::string(what) + " '" + name +
                      "' is not a checkpoint name (one directory name, not starting with '.', no '/')");
}

// Nothing but a checkpoint (or an empty directory) is ever replaced by one.
void check_replaceable(const fs::path& dir) {
  if (const std::string why = why_not_replaceable(dir.string()); !why.empty())
    throw ConfigError("checkpoint '" + dir.string() + "' " + why + "; skein replaces only a checkpoint it wrote");
}

// What a checkpoint file is written through: never failing in its
// writer's eyes, so that libtorch's archive writer (PyTorchStreamWriter),
// which throws from its destructor when a write fails (std::terminate: a
// full disk ended the process with a backtrace), always finishes. The
// first failure's errno is kept for the error the caller throws after.
class FailLaterBuf final : public std::streambuf {
 public:
  explicit FailLaterBuf(std::streambuf& file) : file_(file) {}
  int error() const { return error_; }  // errno of the first failed write, 0 if none

 protected:
  int_type overflow(int_type ch) override {
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      const char byte = traits_type::to_char_type(ch);
      xsputn(&byte, 1);
    }
    return traits_type::not_eof(ch);
  }
  std::streamsize xsputn(const char* bytes, std::streamsize n) override {
    errno = 0;
    if (error_ == 0 && file_.sputn(bytes, n) != n) error_ = errno != 0 ? errno : EIO;
    return n;
  }
  int sync() override {
    errno = 0;
    if (error_ == 0 && file_.pubsync() != 0) error_ = errno != 0 ? errno : EIO;
    return 0;
  }

 private:
  std::streambuf& file_;
  int error_ = 0;
};

template <class Save>
std::string serialized(const Save& save) {
  std::ostringstream out;
  save(out);
  return out.str();
}

}  // namespace

std::string CheckpointWriter::root() const { return run_files::path(run_.run_dir, run_files::kCheckpoints); }

std::string CheckpointWriter::part_key(const std::string& name, long epoch, const std::string& part, int rank) const {
  return store_key::checkpoint_part(run_.run_id, name, epoch, part, rank);
}

std::vector<std::uint8_t> CheckpointWriter::take_part(const std::string& name, long epoch, const std::string& part,
                                                      int rank) const {
  const std::string key = part_key(name, epoch, part, rank);
  auto bytes = store_->store->get(key);
  store_->store->deleteKey(key);
  return bytes;
}

std::vector<std::string> CheckpointWriter::gather_on_main(const std::string& name, long epoch,
                                                          const std::string& part, std::string mine,
                                                          bool alone) const {
  if (alone) return std::vector<std::string>(static_cast<std::size_t>(run_.world_size), mine);
  if (run_.world_size == 1) return {std::move(mine)};
  if (!run_.is_main()) {
    store_set(*store_->store, part_key(name, epoch, part, run_.rank), mine);
    return {};
  }
  std::vector<std::string> all{std::move(mine)};
  for (int r = 1; r < run_.world_size; ++r) {
    const auto bytes = take_part(name, epoch, part, r);
    all.emplace_back(bytes.begin(), bytes.end());
  }
  return all;
}

// A sharded optimizer's shard of a rank other than 0 (each parameter's whole
// state: joined_shard), serialized straight into a store stream that rank 0
// reads (write_optimizer): neither rank holds its bytes whole. Blocks until
// rank 0 has taken all but the last two chunks.
void CheckpointWriter::send_optimizer_shard(const std::string& name, long epoch) const {
  if (parts_.shard_spans.empty() || run_.is_main()) return;
  torch::serialize::OutputArchive archive;
  joined_shard(*parts_.optimizer_factory, {*parts_.optimizer, parts_.step_pieces})->save(archive);
  StoreStreamWriter out(*store_->store, part_key(name, epoch, "optimizer", run_.rank));
  archive.save_to([&](const void* data, std::size_t n) {
    out.write(data, n);
    return n;
  });
  out.close();
}

// optimizer.pt, written by rank 0 straight to `out`: the running optimizer,
// or a sharded one consolidated (rank 0's states shared, not copied; the
// other ranks' shards read one at a time, each streamed from the store into
// a file in `tmp` and loaded from there, so that rank 0 holds its states
// once, not its bytes as well).
void CheckpointWriter::write_optimizer(const std::string& name, long epoch, const std::string& tmp,
                                       std::ostream& out, const CheckpointParts& parts) const {
  std::unique_ptr<torch::optim::Optimizer> whole;
  if (parts.whole_optimizer) {
    torch::serialize::OutputArchive archive;
    parts.whole_optimizer->save(archive);
    archive.save_to(out);
    return;
  }
  if (parts.alone && !parts_.shard_spans.empty())
    throw std::logic_error("a sharded optimizer's checkpoint written alone needs the whole optimizer");
  if (!parts_.shard_spans.empty()) {
    ShardSource shards;
    shards.rank = run_.rank;
    shards.world_size = run_.world_size;
    shards.load = [&](int rank, torch::serialize::InputArchive& archive, const torch::Device& device) {
      const std::string file = (fs::path(tmp) / (".optimizer-shard-" + std::to_string(rank))).string();
      {
        std::ofstream shard(file, std::ios::binary | std::ios::trunc);
        read_store_stream(*store_->store, part_key(name, epoch, "optimizer", rank), [&](const auto& chunk) {
          shard.write(reinterpret_cast<const char*>(chunk.data()), static_cast<std::streamsize>(chunk.size()));
        });
        if (!shard.flush()) throw std::runtime_error("cannot write " + file);
      }
      archive.load_from(file, device);
      fs::remove(file);
    };
    whole = consolidated_optimizer(*parts_.optimizer_factory, {*parts_.optimizer, parts_.step_pieces},
                                   parts_.model->parameters(), parts_.shard_spans, shards);
  }
  torch::serialize::OutputArchive archive;
  (whole ? *whole : *parts_.optimizer).save(archive);
  archive.save_to(out);
}

// trainer.json: what the tensors files do not say, and their checksums.
CheckpointMeta CheckpointWriter::meta(const std::vector<std::pair<std::string, std::string>>& checksums,
                                      const EpochPosition& at) const {
  CheckpointMeta meta;
  meta.epoch = at.open ? at.epoch - 1 : at.epoch;
  // libtorch's optimizer archive does not bring back a changed learning rate.
  for (auto& group : parts_.optimizer->param_groups()) meta.lr.push_back(group.options().get_lr());
  meta.world_size = run_.world_size;
  meta.seed = config_.seed;
  meta.model = config_.model.record->name;
  meta.data_info = parts_.data_info;
  meta.callbacks = parts_.callbacks.states();
  meta.files = checksums;
  meta.script = script_pin(*parts_.model);
  if (parts_.splits.scaling.active()) meta.input_scaling = parts_.splits.scaling.to_json();
  if (parts_.splits.data_scaling) meta.data_scaling = data_scaling_json(*parts_.splits.data_scaling);
  if (parts_.loss_scaler.enabled())
    meta.loss_scale = CheckpointMeta::LossScale{parts_.loss_scaler.current_scale(), parts_.loss_scaler.growth_tracker()};
  if (at.open)
    meta.open_epoch = CheckpointMeta::OpenEpoch{at.epoch,
                                                at.next_batch,
                                                static_cast<std::int64_t>(parts_.splits.train.size()),
                                                static_cast<long>(config_.batch_size),
                                                static_cast<long>(config_.accumulate_steps),
                                                at.passes};
  return meta;
}

// Mid-epoch checkpoints: this rank's part of the open epoch (open_epoch.json).
nlohmann::json CheckpointWriter::open_epoch_part(const EpochPosition& at) const {
  nlohmann::json record = history_.last();
  record.erase(history_key::kBatches);
  return open_epoch_rank_json({record, parts_.callbacks.states(), at.seconds});
}

struct CheckpointWriter::RankParts {
  std::vector<torch::Tensor> rng, cuda_rng, open_batches;
  nlohmann::json open_ranks;
  std::vector<torch::Tensor> parallel;
};

void CheckpointWriter::write(const std::string& root_dir, const std::string& name, const EpochPosition& at,
                             const CheckpointParts& parts) {
  // Collectives: every rank takes part. A resumed run continues each rank's
  // random stream, and the wrapper's state (e.g. PowerSGD's error feedback).
  std::vector<torch::Tensor> rng_states;
  if (!parts.model_only)
    for (const auto& bytes :
         gather_on_main(name, at.epoch, "rng", bytes_of(at::detail::getDefaultCPUGenerator().get_state()), parts.alone))
      rng_states.push_back(tensor_of(bytes));
  std::vector<torch::Tensor> cuda_rng_states;
  if (!parts.model_only) {
    bool any = false;
    for (const auto& bytes : gather_on_main(name, at.epoch, "rng_cuda", device_generator_state(run_), parts.alone)) {
      cuda_rng_states.push_back(tensor_of(bytes));
      any = any || !bytes.empty();
    }
    if (!any) cuda_rng_states.clear();
  }
  // Inside an epoch: every rank's records and callback states of the epoch so far.
  const bool open = at.open && !parts.model_only;
  std::vector<torch::Tensor> open_batches;
  nlohmann::json open_ranks = nlohmann::json::array();
  if (open) {
    for (const auto& bytes : gather_on_main(name, at.epoch, "open_batches", history_.batches().to_bytes(), parts.alone))
      open_batches.push_back(tensor_of(open_batches.empty() || !parts.alone ? bytes : BatchLog{}.to_bytes()));
    for (const auto& text : gather_on_main(name, at.epoch, "open_part", encode_nonfinite(open_epoch_part(at)).dump(), parts.alone))
      open_ranks.push_back(nlohmann::json::parse(text));
  }
  std::vector<torch::Tensor> parallel_states;
  auto* stateful = parts.model_only ? nullptr : dynamic_cast<ParallelState*>(parts_.parallel.get());
  if (stateful) {
    bool any = false;
    for (const auto& bytes : gather_on_main(name, at.epoch, "parallel", stateful->state(), parts.alone)) {
      parallel_states.push_back(tensor_of(bytes));
      any = any || !bytes.empty();
    }
    if (!any) parallel_states.clear();
  }
  // Last of the parts: it waits for rank 0 to read it, after the model's files.
  if (!parts.model_only && !parts.alone) send_optimizer_shard(name, at.epoch);
  if (!run_.is_main()) return;

  const fs::path root_path(root_dir);
  check_replaceable(root_path / name);
  if (!names_checked_) {  // the model's names do not change during a run
    check_names_storable(*parts_.model, name);
    names_checked_ = true;
  }
  fs::create_directories(root_path);
  if (root_dir == root())
    run_files::record(run_, std::string(run_files::kCheckpoints) + "/" + name);  // listed before it exists: --overwrite finds it
  const fs::path tmp = root_path / fitting_name(".tmp-", name, "-" + std::to_string(::getpid()));
  try {
    write_files(tmp.string(), name, at, parts, {rng_states, cuda_rng_states, open_batches, open_ranks, parallel_states});
    install_checkpoint(root_path, tmp, name);
  } catch (const std::exception& e) {
    // A full disk, say: what was written goes (it frees the space), the
    // checkpoints before this one stay as they were.
    boost::system::error_code ec;
    fs::remove_all(tmp, ec);
    throw std::runtime_error("checkpoint " + (root_path / name).string() + " could not be written (" +
                             first_line(e.what()) + "); the checkpoints written before it are intact");
  }
}

void CheckpointWriter::write_files(const std::string& tmp_dir, const std::string& name, const EpochPosition& at,
                                   const CheckpointParts& parts, const RankParts& ranks) {
  const fs::path tmp(tmp_dir);
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const bool open = at.open && !parts.model_only;
  std::vector<std::pair<std::string, std::string>> checksums;  // verified on resume
  auto put = [&](const char* file, const std::string& bytes) {
    write_file_atomic((tmp / file).string(), bytes);
    checksums.emplace_back(file, crc64_hex(bytes));
    checkpoint_step();
  };
  // The model's files go straight to disk: a model of hundreds of MB is
  // never held a second time in memory (rank 0's peak). Their checksums are
  // taken on the way, not by reading them back.
  auto put_streamed = [&](const char* file, const std::function<void(std::ostream&)>& save) {
    const std::string path = (tmp / file).string();
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      if (!out) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
      FailLaterBuf sink(*out.rdbuf());
      Crc64Streambuf summed(sink);
      std::ostream through(&summed);
      save(through);
      through.flush();
      sink.pubsync();
      if (sink.error() != 0) throw std::runtime_error("cannot write " + path + ": " + std::strerror(sink.error()));
      out.close();
      if (!out) throw std::runtime_error("cannot write " + path);
      checksums.emplace_back(file, summed.hex());
    }
    fsync_path(path, O_RDONLY);
    checkpoint_step();
  };
  put_streamed(checkpoint_files::kModel, [&](std::ostream& out) { torch::save(parts_.model, out); });
  put_streamed(checkpoint_files::kStateDict, [&](std::ostream& out) { write_state_dict(*parts_.model, out); });
  skein_fault_point("checkpoint.halfway", at.epoch);
  if (!parts.model_only) {
    put_streamed(checkpoint_files::kOptimizer, [&](std::ostream& out) { write_optimizer(name, at.epoch, tmp.string(), out, parts); });
    if (open) {
      put(checkpoint_files::kHistory, history_.first_epochs(history_.size() - 1).dump() + "\n");
      put(checkpoint_files::kOpenEpochParts, open_epoch_ranks_json(ranks.open_ranks).dump() + "\n");
      put(checkpoint_files::kOpenEpochBatches, serialized([&](std::ostream& out) { torch::save(ranks.open_batches, out); }));
    } else {
      put(checkpoint_files::kHistory, history_.dump() + "\n");
    }
    put(checkpoint_files::kRng, serialized([&](std::ostream& out) { torch::save(ranks.rng, out); }));
    if (!ranks.cuda_rng.empty())
      put(checkpoint_files::kCudaRng, serialized([&](std::ostream& out) { torch::save(ranks.cuda_rng, out); }));
    if (!ranks.parallel.empty())
      put(checkpoint_files::kParallel, serialized([&](std::ostream& out) { torch::save(ranks.parallel, out); }));
  }
  CheckpointMeta written = meta(checksums, at);
  if (parts.epoch >= 0) written.epoch = parts.epoch;
  written.model_only = parts.model_only;
  // last: marks it complete
  put(checkpoint_files::kMeta, encode_nonfinite(checkpoint_meta_json(written)).dump(2) + "\n");
  fsync_path(tmp.string(), O_RDONLY | O_DIRECTORY);
  checkpoint_step();
}

void CheckpointWriter::link(const std::string& from, const std::string& name) {
  const fs::path root_path(root());
  check_replaceable(root_path / name);
  run_files::record(run_, std::string(run_files::kCheckpoints) + "/" + name);
  const fs::path tmp = root_path / fitting_name(".tmp-", name, "-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  for (fs::directory_iterator it(root_path / from), end; it != end; ++it) {
    fs::create_hard_link(it->path(), tmp / it->path().filename());
    checkpoint_step();
  }
  fsync_path(tmp.string(), O_RDONLY | O_DIRECTORY);
  install_checkpoint(root_path, tmp, name);
}

void CheckpointWriter::request(const std::string& name, const std::vector<std::string>& remove_after) {
  check_checkpoint_name(name, "request_checkpoint: checkpoint");
  for (const auto& old : remove_after) check_checkpoint_name(old, "request_checkpoint: remove_after");
  requests_.push_back({name, remove_after});
}

// Writing is a collective: every rank must ask for the same checkpoints
// (they do when they decide from a synced history).
void CheckpointWriter::check_ranks_agree(long epoch) const {
  if (run_.world_size == 1) return;
  std::string names;
  for (const auto& r : requests_) names += r.name + ";";
  std::vector<double> h{static_cast<double>(std::hash<std::string>{}(names) % 1000003)};
  std::vector<double> h_max = h;
  parts_.parallel->all_reduce_sum(h);
  parts_.parallel->all_reduce_max(h_max);
  if (h[0] != h_max[0] * run_.world_size)
    throw std::runtime_error("ranks asked for different checkpoints at epoch " + std::to_string(epoch) + " (rank " +
                             std::to_string(run_.rank) + ": '" + names +
                             "'); decide them from a synced history (tcpstore or filestore)");
}

void CheckpointWriter::write_requested(const EpochPosition& at) {
  check_ranks_agree(at.epoch);
  std::string written;  // the first checkpoint of this epoch: later ones link its files
  for (const auto& request : requests_) {
    if (written.empty()) {
      write(root(), request.name, at);
      written = request.name;
    } else if (run_.is_main()) {
      link(written, request.name);
    }
    if (run_.is_main()) {
      for (const auto& old : request.remove_after) {
        boost::system::error_code ec;
        fs::remove_all(root() + "/" + old, ec);
      }
    }
  }
  if (!requests_.empty()) parts_.parallel->barrier();
  requests_.clear();
}

}  // namespace skein::core
