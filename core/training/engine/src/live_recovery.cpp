#include "skein/training/engine/live_recovery.hpp"

#include <unistd.h>

#include <csignal>

#include <vector>

#include "skein/errors.hpp"
#include "skein/host/failure_report.hpp"
#include "skein/io/store.hpp"
#include "skein/training/store/live_records.hpp"
#include "skein/training/store/store_keys.hpp"

namespace skein::core {

namespace {

QuorumOptions quorum_options(const LiveRecoveryOptions& o, const RunInfo& run) {
  QuorumOptions q;
  q.window = std::chrono::milliseconds(static_cast<long>(o.window_s * 1000));
  q.first_joiner_id = run.world_size;  // the run's first world size (WORLD_SIZE, also a replacement's)
  return q;
}

}  // namespace

std::unique_ptr<LiveRecovery> LiveRecovery::make(Parallel& parallel, const RunInfo& run, const RunStore* store,
                                                 bool joiner) {
  auto* regrouping = dynamic_cast<RegroupingParallel*>(&parallel);
  if (!regrouping || !regrouping->live_recovery().enabled || (run.world_size == 1 && !joiner)) return nullptr;
  if (!store || !*store)
    throw ConfigError("parallel: live_recovery needs the run's store (start it with skein train --nproc-per-node "
                      "or torchrun)");
  return std::make_unique<LiveRecovery>(*regrouping, run, *store, joiner);
}

LiveRecovery::LiveRecovery(RegroupingParallel& parallel, const RunInfo& run, const RunStore& store, bool joiner)
    : parallel_(parallel),
      options_(parallel.live_recovery()),
      store_(store.store),
      run_id_(run.run_id),
      quorum_(*store_, run.run_id, quorum_options(options_, run)),
      id_(run.rank),
      first_world_(run.world_size),
      wait_s_(run.timeout_s),
      joiner_(joiner) {}

std::optional<Membership> LiveRecovery::start() {
  // A write to a peer that is gone must fail as an error to recover from:
  // Gloo's sends do not all pass MSG_NOSIGNAL, and SIGPIPE would end the
  // process (docs/distributed.md says so to programs with a session).
  std::signal(SIGPIPE, SIG_IGN);
  store_set(*store_, store_key::live_recovery_on(run_id_), "1");  // for run.json: the recoveries
  if (joiner_) return join();
  membership_ = Membership::initial(first_world_);
  report_live_id(id_);
  return membership_;
}

std::optional<Membership> LiveRecovery::join() {
  id_ = quorum_.ask_to_join();
  report_live_id(id_);
  try {
    membership_ = quorum_.wait_to_be_taken_in(id_, std::chrono::milliseconds(static_cast<long>(1000 * wait_s_)));
  } catch (const RunClosed&) {
    return std::nullopt;
  }
  return membership_;
}

std::optional<Membership> LiveRecovery::after_failure() {
  parallel_.drop_group();
  membership_ = quorum_.after_failure(membership_, id_);
  if (membership_.has(id_)) return membership_;
  joiner_ = true;  // left out (too late for the agreement): back as a replacement
  return join();
}

std::int64_t LiveRecovery::joiners_to_take(Parallel& collectives) {
  std::vector<double> asked{membership_.rank_of(id_) == 0 ? static_cast<double>(quorum_.joiners_asked()) : 0.0};
  collectives.all_reduce_max(asked);
  const auto n = static_cast<std::int64_t>(asked[0]);
  return n > membership_.joiners_seen ? n : 0;
}

Membership LiveRecovery::grow(std::int64_t asked) {
  membership_ = quorum_.grow(membership_, asked);
  return membership_;
}

WorldChange LiveRecovery::world_change() const {
  return {membership_.generation, quorum_.group_prefix(membership_.generation), membership_.rank_of(id_),
          static_cast<int>(membership_.members.size())};
}

void LiveRecovery::record(const nlohmann::json& recovery) { record_recovery(*store_, run_id_, recovery); }

void LiveRecovery::close(int world_size) {
  record_final_world(*store_, run_id_, world_size);
  quorum_.close();
}

}  // namespace skein::core
