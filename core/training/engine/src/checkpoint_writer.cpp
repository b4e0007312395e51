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
#include "skein/training/engine/model_copy.hpp"
#include "skein/training/device/tensor_bytes.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

namespace {

// torch::save writes some names (a submodule called like a TorchScript
// keyword, say) that torch::load then cannot parse: found before anything is
// written, not at resume. Whether torch::load parses a model depends on its
// names only, so the check loads a skeleton of it, not the model again
// (which would hold a second copy of every parameter on rank 0).
void check_names_storable(const torch::nn::Module& model, const std::string& checkpoint) {
  // Module::save's layout, every tensor an empty one of its dtype.
  torch::serialize::OutputArchive skeleton;
  write_module_archive(model, skeleton, [](const torch::Tensor& t) {
    auto e = torch::empty({0}, torch::dtype(t.scalar_type()));
    return t.requires_grad() ? e.requires_grad_() : e;
  });
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

// The optimizer optimizer.pt holds (rank 0): the running one, or a sharded
// one consolidated (rank 0's states shared, not copied; the other ranks'
// shards read one at a time, each streamed from the store into a file in
// `tmp` and loaded from there, so that rank 0 holds its states once, not
// its bytes as well), kept in `whole`.
const torch::optim::Optimizer& CheckpointWriter::optimizer_to_save(const std::string& name, long epoch,
                                                                   const std::string& tmp,
                                                                   const CheckpointParts& parts,
                                                                   std::unique_ptr<torch::optim::Optimizer>& whole) const {
  if (parts.whole_optimizer) return *parts.whole_optimizer;
  if (parts_.shard_spans.empty()) return *parts_.optimizer;
  if (parts.alone) throw std::logic_error("a sharded optimizer's checkpoint written alone needs the whole optimizer");
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
  return *whole;
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

// What rank 0 writes of one checkpoint, in order (the head of this file
// lists the files): over the run's own tensors when written at once, over
// copies taken at the step boundary when written in the background.
struct CheckpointWriter::Content {
  std::function<void(std::ostream&)> model;      // model.pt
  StateDict state_dict;                           // model_state_dict.pt's entries
  std::function<void(std::ostream&)> optimizer;  // optimizer.pt; empty for a model-only checkpoint
  std::vector<std::pair<const char*, std::string>> files;  // the small files
  CheckpointMeta meta;  // trainer.json, less its files' checksums
  long epoch = 0;       // the "checkpoint.halfway" fault point's value
};

void CheckpointWriter::write(const std::string& root_dir, const std::string& name, const EpochPosition& at,
                             const CheckpointParts& parts) {
  background_.finish();  // one written in the background first: one write at a time
  if (auto written = prepare(root_dir, name, at, parts, false)) written();
}

void CheckpointWriter::save(const std::string& root_dir, const std::string& name, const EpochPosition& at) {
  const bool background = config_.checkpoint_background;
  if (background) background_.finish();  // one in flight at most: this one waits for the last
  finish_write(prepare(root_dir, name, at, {}, background), background);
}

void CheckpointWriter::finish_write(std::function<void()> written, bool background) {
  if (written && background) {
    background_.start(std::move(written));
  } else if (written) {
    written();
  }
  if (!background) parts_.parallel->barrier();
}

std::function<void()> CheckpointWriter::prepare(const std::string& root_dir, const std::string& name,
                                                const EpochPosition& at, const CheckpointParts& parts, bool copies) {
  // Collectives: every rank takes part. A resumed run continues each rank's
  // random stream, and the wrapper's state (e.g. PowerSGD's error feedback).
  RankParts ranks;
  if (!parts.model_only)
    for (const auto& bytes :
         gather_on_main(name, at.epoch, "rng", bytes_of(at::detail::getDefaultCPUGenerator().get_state()), parts.alone))
      ranks.rng.push_back(tensor_of(bytes));
  if (!parts.model_only) {
    bool any = false;
    for (const auto& bytes : gather_on_main(name, at.epoch, "rng_cuda", device_generator_state(run_), parts.alone)) {
      ranks.cuda_rng.push_back(tensor_of(bytes));
      any = any || !bytes.empty();
    }
    if (!any) ranks.cuda_rng.clear();
  }
  // Inside an epoch: every rank's records and callback states of the epoch so far.
  const bool open = at.open && !parts.model_only;
  ranks.open_ranks = nlohmann::json::array();
  if (open) {
    for (const auto& bytes : gather_on_main(name, at.epoch, "open_batches", history_.batches().to_bytes(), parts.alone))
      ranks.open_batches.push_back(tensor_of(ranks.open_batches.empty() || !parts.alone ? bytes : BatchLog{}.to_bytes()));
    for (const auto& text : gather_on_main(name, at.epoch, "open_part", encode_nonfinite(open_epoch_part(at)).dump(), parts.alone))
      ranks.open_ranks.push_back(nlohmann::json::parse(text));
  }
  auto* stateful = parts.model_only ? nullptr : dynamic_cast<ParallelState*>(parts_.parallel.get());
  if (stateful) {
    bool any = false;
    for (const auto& bytes : gather_on_main(name, at.epoch, "parallel", stateful->state(), parts.alone)) {
      ranks.parallel.push_back(tensor_of(bytes));
      any = any || !bytes.empty();
    }
    if (!any) ranks.parallel.clear();
  }
  // Last of the parts: it waits for rank 0 to read it (content()).
  if (!parts.model_only && !parts.alone) send_optimizer_shard(name, at.epoch);
  if (!run_.is_main()) return {};

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
  // A full disk, say: what was written goes (it frees the space), the
  // checkpoints before this one stay as they were.
  auto failed = [root_path, tmp, name](const std::exception& e) {
    boost::system::error_code ec;
    fs::remove_all(tmp, ec);
    return std::runtime_error("checkpoint " + (root_path / name).string() + " could not be written (" +
                              first_line(e.what()) + "); the checkpoints written before it are intact");
  };
  std::shared_ptr<Content> c;
  try {
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    c = content(name, at, parts, ranks, tmp.string(), copies);
  } catch (const std::exception& e) {
    throw failed(e);
  }
  return [root_path, tmp, name, c, failed] {
    try {
      write_files(tmp.string(), *c);
      install_checkpoint(root_path, tmp, name);
    } catch (const std::exception& e) {
      throw failed(e);
    }
  };
}

std::shared_ptr<CheckpointWriter::Content> CheckpointWriter::content(const std::string& name, const EpochPosition& at,
                                                                     const CheckpointParts& parts,
                                                                     const RankParts& ranks, const std::string& tmp,
                                                                     bool copies) {
  auto c = std::make_shared<Content>();
  c->epoch = at.epoch;
  std::shared_ptr<ModelCopy> model;
  if (copies) {
    model = std::make_shared<ModelCopy>(copy_model(*parts_.model));
    c->model = [model](std::ostream& out) { model->archive->save_to(out); };
    c->state_dict = model->named;
  } else {
    c->model = [this](std::ostream& out) { torch::save(parts_.model, out); };
    c->state_dict = named_tensors(*parts_.model);
  }
  if (!parts.model_only) {
    std::unique_ptr<torch::optim::Optimizer> whole;
    const torch::optim::Optimizer& optimizer = optimizer_to_save(name, at.epoch, tmp, parts, whole);
    std::shared_ptr<const torch::optim::Optimizer> held = std::move(whole);  // alive until written
    const torch::optim::Optimizer* saved = held ? held.get() : &optimizer;
    if (copies) {
      // Its states copied as the model's parameters were, over those copies;
      // an optimizer whose state tensors are not named goes as bytes.
      held = copied_optimizer(*parts_.optimizer_factory, *saved,
                              parts_.model->parameters(), model->parameters);
      if (!held) {
        auto bytes = std::make_shared<std::string>(serialized([&](std::ostream& out) {
          torch::serialize::OutputArchive archive;
          saved->save(archive);
          archive.save_to(out);
        }));
        c->optimizer = [bytes](std::ostream& out) { out.write(bytes->data(), static_cast<std::streamsize>(bytes->size())); };
      }
      saved = held.get();
    }
    if (!c->optimizer)
      c->optimizer = [held, saved](std::ostream& out) {
        torch::serialize::OutputArchive archive;
        saved->save(archive);
        archive.save_to(out);
      };
    const bool open = at.open;
    if (open) {
      c->files.emplace_back(checkpoint_files::kHistory, history_.first_epochs(history_.size() - 1).dump() + "\n");
      c->files.emplace_back(checkpoint_files::kOpenEpochParts, open_epoch_ranks_json(ranks.open_ranks).dump() + "\n");
      c->files.emplace_back(checkpoint_files::kOpenEpochBatches,
                            serialized([&](std::ostream& out) { torch::save(ranks.open_batches, out); }));
    } else {
      c->files.emplace_back(checkpoint_files::kHistory, history_.dump() + "\n");
    }
    c->files.emplace_back(checkpoint_files::kRng, serialized([&](std::ostream& out) { torch::save(ranks.rng, out); }));
    if (!ranks.cuda_rng.empty())
      c->files.emplace_back(checkpoint_files::kCudaRng,
                            serialized([&](std::ostream& out) { torch::save(ranks.cuda_rng, out); }));
    if (!ranks.parallel.empty())
      c->files.emplace_back(checkpoint_files::kParallel,
                            serialized([&](std::ostream& out) { torch::save(ranks.parallel, out); }));
  }
  c->meta = meta({}, at);
  if (parts.epoch >= 0) c->meta.epoch = parts.epoch;
  c->meta.model_only = parts.model_only;
  return c;
}

void CheckpointWriter::write_files(const std::string& tmp_dir, const Content& c) {
  const fs::path tmp(tmp_dir);
  std::vector<std::pair<std::string, std::string>> checksums;  // verified on resume
  auto put = [&](const char* file, const std::string& bytes) {
    write_file_atomic((tmp / file).string(), bytes);
    checksums.emplace_back(file, crc64_hex(bytes));
    checkpoint_step();
  };
  // The model's files go straight to disk: a model of hundreds of MB is
  // never held a second time in memory (rank 0's peak, written at once).
  // Their checksums are taken on the way, not by reading them back.
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
  put_streamed(checkpoint_files::kModel, c.model);
  put_streamed(checkpoint_files::kStateDict, [&](std::ostream& out) { write_state_dict(c.state_dict, out); });
  skein_fault_point("checkpoint.halfway", c.epoch);
  if (c.optimizer) put_streamed(checkpoint_files::kOptimizer, c.optimizer);
  for (const auto& [file, bytes] : c.files) put(file, bytes);
  CheckpointMeta written = c.meta;
  written.files = checksums;
  // last: marks it complete
  put(checkpoint_files::kMeta, encode_nonfinite(checkpoint_meta_json(written)).dump(2) + "\n");
  fsync_path(tmp.string(), O_RDONLY | O_DIRECTORY);
  checkpoint_step();
}

void CheckpointWriter::link(const std::string& from, const std::string& name) const {
  const fs::path root_path(root());
  check_replaceable(root_path / name);
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
  if (requests_.empty()) return;
  const auto started = std::chrono::steady_clock::now();
  const bool background = config_.checkpoint_background;
  if (background) background_.finish();  // one in flight at most: these wait for the last
  const std::vector<Request> requests = std::move(requests_);
  requests_.clear();
  // The first is written, the others link its files.
  std::function<void()> written = prepare(root(), requests.front().name, at, {}, background);
  std::function<void()> all;  // rank 0's: the write, the links, the removals
  if (run_.is_main()) {
    for (std::size_t i = 1; i < requests.size(); ++i)
      run_files::record(run_, std::string(run_files::kCheckpoints) + "/" + requests[i].name);
    all = [this, written, requests] {
      written();
      for (std::size_t i = 0; i < requests.size(); ++i) {
        if (i > 0) link(requests.front().name, requests[i].name);
        for (const auto& old : requests[i].remove_after) {
          boost::system::error_code ec;
          fs::remove_all(root() + "/" + old, ec);
        }
      }
    };
  }
  finish_write(std::move(all), background);
  stalls_.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

}  // namespace skein::core
