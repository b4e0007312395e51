#pragma once
// The engine's side of live recovery (docs/distributed.md, "Live recovery";
// SDK: skein::RegroupingParallel, skein::WorldChangeListener): who this process is in the run's
// membership, and each change of it. After a failed step the survivors agree
// through the run's store (Quorum) on who goes on; at each committed
// optimizer step the members agree, in one small collective, on the
// replacements waiting to join. The Trainer moves its state (trainer.cpp).
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "skein/detail/export.hpp"
#include "skein/detail/json.hpp"
#include "skein/parallel.hpp"
#include "skein/run.hpp"
#include "skein/run_store.hpp"
#include "skein/training/store/quorum.hpp"

namespace skein::core {

// A failure live recovery does not retry: the run ends with it.
struct NotRecoverable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class SKEIN_EXPORT LiveRecovery {
 public:
  // Null unless `parallel` is a RegroupingParallel with live recovery on and
  // the run has several processes or `joiner` is set (a replacement: the
  // launcher sets SKEIN_LIVE_JOIN). Throws ConfigError without a store.
  static std::unique_ptr<LiveRecovery> make(Parallel& parallel, const RunInfo& run, const RunStore* store,
                                            bool joiner);
  LiveRecovery(RegroupingParallel& parallel, const RunInfo& run, const RunStore& store, bool joiner);

  const LiveRecoveryOptions& options() const { return options_; }
  RegroupingParallel& parallel() { return parallel_; }
  const Membership& membership() const { return membership_; }
  int id() const { return id_; }  // this process's in the membership
  // A replacement that has no state of the run yet.
  bool joiner() const { return joiner_; }
  // It took its leader's state: from now on a member like the others.
  void member_now() { joiner_ = false; }

  // The membership this process starts training in: the first, or for a
  // replacement the one that takes it in; nullopt when the run ended first.
  std::optional<Membership> start();
  // After a failed step: drops the group and agrees on who goes on; a
  // process left out asks to join again (nullopt: the run ended meanwhile).
  std::optional<Membership> after_failure();
  // At a committed optimizer step, on every member (a collective of
  // `collectives`): the replacements to take in, 0 for none.
  std::int64_t joiners_to_take(Parallel& collectives);
  Membership grow(std::int64_t asked);
  // This process's place in the current membership.
  WorldChange world_change() const;
  // The leader records each recovery (run.json's "recoveries").
  void record(const nlohmann::json& recovery);
  // The run is over (its main calls it): replacements still waiting leave,
  // and the world size it ended with is recorded for the digests' check.
  void close(int world_size);

 private:
  std::optional<Membership> join();

  RegroupingParallel& parallel_;
  LiveRecoveryOptions options_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::string run_id_;
  Quorum quorum_;
  Membership membership_;
  int id_ = 0;          // in the membership: the first rank, or the order of asking to join
  int first_world_ = 1;  // WORLD_SIZE as the run started
  double wait_s_ = 300;  // a replacement's wait to be taken in (the run's timeout)
  bool joiner_ = false;
};

}  // namespace skein::core
