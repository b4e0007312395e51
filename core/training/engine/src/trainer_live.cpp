// The Trainer's part in live recovery (live_recovery.hpp; docs/distributed.md,
// "Live recovery"): after a failed step, and when replacements join, every
// member of the new membership takes its leader's state. The leader writes a
// checkpoint of where it is (its last committed optimizer step) by itself,
// into memory, and sends it over the new group; every member restores it as
// a resume would (on another world size the rest of the epoch is re-sharded),
// and the epoch reopens there. So a step that some applied and others did not
// ends the same everywhere: the leader's.
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <boost/filesystem.hpp>

#include "skein/errors.hpp"
#include "skein/host/interrupt.hpp"
#include "skein/training/checkpoint/checkpoint_blob.hpp"
#include "skein/training/checkpoint/fault_point.hpp"
#include "skein/training/engine/live_shards.hpp"
#include "skein/training/engine/optimizer_shards.hpp"
#include "skein/training/engine/trainer.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

namespace {

// This process's directory for a hand-over's checkpoint: in memory where
// /dev/shm is, removed when the hand-over ends.
class HandOverDir {
 public:
  explicit HandOverDir(std::int64_t generation) {
    boost::system::error_code ec;
    const fs::path base = fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    path_ = (base / ("skein-live-" + std::to_string(::getpid()) + "-" + std::to_string(generation))).string();
    fs::remove_all(path_, ec);
  }
  ~HandOverDir() {
    boost::system::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A process left out of the membership whose run ended before it could join
// again: it ends training without a failure.
struct LeftOut {};

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

void Trainer::join_as_replacement() {
  live_ = LiveRecovery::make(*parts_.parallel, run_, store_, true);
  if (!live_)
    throw ConfigError(std::string(run_key::kParallel) +
                      ": this process was started to replace a lost one, but the run's parallel wrapper does "
                      "not have live_recovery on");
  check_live_history();
}

// Every rank's decisions come from one history only when the backend keeps
// the ranks in step, and it must follow the changes of membership.
void Trainer::check_live_history() const {
  if (!parts_.history->synchronizes_ranks() || !dynamic_cast<WorldChangeListener*>(parts_.history.get()))
    throw ConfigError(std::string(run_key::kHistory) + ": live recovery needs a history backend that keeps the " +
                      "ranks in step through changes of membership (filestore, or tcpstore); \"" +
                      config_.history.record->name + "\" does not");
}

EpochPosition Trainer::committed_position() {
  epoch_batches_ = committed_batches_;  // a micro-batch after the last optimizer step is trained again
  return position();
}

bool Trainer::after_committed_step() {
  // committed_batches_ moved with the step (train_batch).
  kept_hand_over_.clear();  // the state moved on
  failures_in_a_row_ = 0;
  const std::int64_t asked = live_->joiners_to_take(*parts_.parallel);
  if (recovery_ && failed_at_) {
    (*recovery_)["seconds_lost"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - *failed_at_).count();
    if (run_.is_main()) live_->record(*recovery_);
  }
  recovery_.reset();
  failed_at_.reset();
  if (asked == 0) return false;
  records_.flush();
  const EpochPosition at = committed_position();
  const int was = segment_world_;
  const Membership m = live_->grow(asked);
  log_ << "Live recovery: epoch " << epoch_ << ", after train batch " << committed_batches_
       << ": a replacement joins, " << was << " -> " << m.members.size() << " processes (" << m.to_string() << ")\n";
  if (run_.is_main())
    live_->record({{"event", "joined"},
                   {"unix_time", unix_time()},
                   {"epoch", epoch_},
                   {"train_batch", committed_batches_},
                   {"world_size_before", was},
                   {"world_size_after", m.members.size()},
                   {"generation", m.generation}});
  move_to(m, &at, was);
  return true;
}

bool Trainer::recoverable(const std::exception& e) {
  return !dynamic_cast<const Interrupted*>(&e) && !dynamic_cast<const ConfigError*>(&e) &&
         !dynamic_cast<const NotRecoverable*>(&e);
}

// A failure inside a recovery (a member lost in the hand-over, say) is one
// more round of it.
void Trainer::recover_until_done(std::string why) {
  for (;;) {
    try {
      recover(why);
      return;
    } catch (const std::exception& again) {
      if (!recoverable(again)) throw;
      why = again.what();
    }
  }
}

void Trainer::recover(const std::string& why) {
  const double seen_at = unix_time();
  if (!failed_at_) failed_at_ = std::chrono::steady_clock::now();
  const std::vector<int> before = live_->membership().members;
  const int was = segment_world_;  // not run_'s: a recovery that failed may have changed it
  const EpochPosition at = committed_position();
  const long epoch = epoch_;
  const std::optional<Membership> m = live_->after_failure();
  if (!m) throw LeftOut{};
  // Nobody was lost: the failure is one every rank had (not a lost peer);
  // the second time in a row it is the run's error.
  if (m->members == before && ++failures_in_a_row_ >= 2) throw NotRecoverable(why);
  const int left = static_cast<int>(m->members.size());
  if (left < live_->options().min_ranks)
    throw NotRecoverable("live recovery: " + std::to_string(left) + " of " + std::to_string(was) +
                             " processes left after a failure, fewer than the wrapper's min_ranks " +
                             std::to_string(live_->options().min_ranks) + " (" + first_line(why) + ")");
  // One recovery until a step is committed again: a member lost inside it
  // costs it another round.
  if (!recovery_)
    recovery_ = nlohmann::json{{"event", "lost"},
                               {"unix_time", seen_at},  // the failure seen
                               {"epoch", epoch_},
                               {"train_batch", committed_batches_},
                               {"world_size_before", was},
                               {"reason", first_line(why)},
                               {"rounds", 0}};
  (*recovery_)["world_size_after"] = left;
  (*recovery_)["generation"] = m->generation;
  (*recovery_)["rounds"] = (*recovery_)["rounds"].get<int>() + 1;
  move_to(*m, live_->joiner() ? nullptr : &at, was);
  // Logged by the main rank of the new membership (the old one may be gone).
  log_ << "Live recovery: epoch " << epoch << ", after train batch " << at.next_batch << ": " << first_line(why)
       << "\n"
       << "Live recovery: " << was << " -> " << left << " processes (" << m->to_string() << ")\n";
}

void Trainer::move_to(const Membership& m, const EpochPosition* at, int world_size_was) {
  const WorldChange change = live_->world_change();
  run_.rank = change.rank;
  run_.world_size = change.world_size;
  if (world_changed_) world_changed_(run_);  // the log goes with the main rank, say
  if (auto* listener = dynamic_cast<WorldChangeListener*>(parts_.history.get()))
    listener->on_world_change(run_, m.generation);
  parts_.callbacks.each_as<WorldChangeListener>(
      "on_world_change", [&](WorldChangeListener& l) { l.on_world_change(run_, m.generation); });
  live_->parallel().regroup(change, *parts_.model);
  // The first membership starts alike everywhere (the group's broadcast
  // made the parameters equal); any later one takes its leader's state.
  if (at || live_->joiner()) take_leader_state(at, world_size_was);
}

void Trainer::take_leader_state(const EpochPosition* at, int world_size_was) {
  skein_fault_point("live.hand_over", live_->membership().generation);
  const HandOverDir dir(live_->membership().generation);
  const std::string state = dir.path() + "/state";
  std::string bytes = hand_over_bytes(dir.path(), at, world_size_was);
  if (!fs::exists(state)) unpack_checkpoint_dir(bytes, state);  // the leader wrote it there
  parts_.shard_optimizer(run_, true);  // the new membership's shards (nothing without sharding)
  RestoreOptions options;
  options.undo_on_failure = false;
  options.live = true;
  // Callbacks keep the indexes of the batch log's keys (BatchLog::key, asked
  // once as training begins): the restored log has the same keys in the same places.
  const std::vector<std::string> batch_keys = history_.batches().keys();
  Restored restored = restore_checkpoint(state, parts_, history_, config_, run_, options);
  for (std::size_t i = 0; i < batch_keys.size(); ++i)
    if (history_.batches().key(batch_keys[i]) != static_cast<int>(i))
      throw std::logic_error("live recovery: the restored batch log has other keys");
  records_.intern();  // the history was replaced
  reopen_ = std::move(restored.open);
  epoch_ = restored.epoch;
  start_epoch_ = epoch_ + 1;
  epoch_open_ = false;
  resized_ = restored.world_size_was != 0;  // the checkpoint's world size is not this one
  segment_world_ = run_.world_size;
  live_->member_now();
  if (sharded()) {
    shards_of_ = live_->membership().members;
    kept_hand_over_ = std::move(bytes);
  }
  check_same_parameters();
}

std::string Trainer::hand_over_bytes(const std::string& dir, const EpochPosition* at, int world_size_was) {
  RegroupingParallel& group = live_->parallel();
  std::string bytes;
  std::unique_ptr<torch::optim::Optimizer> whole;
  if (sharded()) {
    ShardOffer mine;
    mine.id = live_->id();
    if (!live_->joiner()) {
      mine.shards_of = shards_of_;
      mine.epoch = epoch_;
      mine.batches = committed_batches_;
      mine.kept = !kept_hand_over_.empty();
    }
    const ShardPlan plan = plan_shard_hand_over(group, run_.rank, run_.world_size, mine);
    if (plan.kept_from >= 0) {
      if (run_.rank == plan.kept_from) bytes = kept_hand_over_;
      group.broadcast_bytes(bytes, plan.kept_from);
      return bytes;
    }
    const auto me = std::find(mine.shards_of.begin(), mine.shards_of.end(), mine.id);
    const int own = me == mine.shards_of.end() ? -1 : static_cast<int>(me - mine.shards_of.begin());
    const auto shards = gather_shards(group, run_.rank, plan, [&](int k) { return shard_bytes(parts_, k, k == own); });
    if (run_.is_main()) whole = place_shards(parts_, shards);
  }
  if (run_.is_main()) {
    if (!at) throw std::logic_error("live recovery: a replacement cannot lead");
    write_hand_over(dir, *at, world_size_was, whole.get());
    bytes = pack_checkpoint_dir(dir + "/state");
  }
  group.broadcast_bytes(bytes, 0);
  return bytes;
}

void Trainer::write_hand_over(const std::string& dir, const EpochPosition& at, int world_size_was,
                              const torch::optim::Optimizer* whole_optimizer) {
  // The checkpoint's world size is the one its open epoch was trained on.
  const int now = run_.world_size;
  run_.world_size = world_size_was;
  CheckpointParts parts;
  parts.alone = true;
  parts.whole_optimizer = whole_optimizer;
  try {
    checkpoints_.write(dir, "state", at, parts);
  } catch (...) {
    run_.world_size = now;
    throw;
  }
  run_.world_size = now;
}

// Every member holds the leader's parameters now, bit for bit: two sums over
// them in double are then the same on every rank (their maximum and minimum
// over ranks agree), at the cost of one small collective.
void Trainer::check_same_parameters() {
  torch::NoGradGuard no_grad;
  double sum = 0, squares = 0;
  for (const auto& p : parts_.model->parameters()) {
    const torch::Tensor d = p.detach().to(torch::kCPU, torch::kDouble);
    sum += d.sum().item<double>();
    squares += d.square().sum().item<double>();
  }
  std::vector<double> extremes{sum, -sum, squares, -squares};
  parts_.parallel->all_reduce_max(extremes);
  if (extremes[0] != -extremes[1] || extremes[2] != -extremes[3])
    throw std::runtime_error("live recovery: the ranks' parameters differ after taking the leader's state");
}

std::optional<std::size_t> Trainer::optimizer_state_bytes() {
  auto bytes = elementwise_state_bytes(*parts_.optimizer_factory, *parts_.optimizer);
  if (bytes && parts_.mirror.active())
    *bytes += elementwise_state_bytes(*parts_.optimizer_factory, parts_.mirror.shard().optimizer).value_or(0);
  return bytes;
}

long Trainer::fit_live_guarded() {
  try {
    return fit_epochs();
  } catch (const LeftOut&) {
    left_before_joining_ = true;
    log_ << "Live recovery: this process was left out and the run ended before it could join again\n";
    return 0;
  }
}

}  // namespace skein::core
