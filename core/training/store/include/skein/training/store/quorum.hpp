#pragma once
// Who goes on after a process of a run is lost, agreed through the run's
// store: the membership layer of live recovery (issue 52; not yet driven by
// the engine). Every process has an id for the whole run (its first rank; a
// replacement gets a new one); a generation is one membership, and each has
// its own store prefix, under which a process group is built anew. The store
// must outlive every worker (the launcher's or torchrun's agent's): the
// processes that agree are the very ones that may die.
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "skein/detail/export.hpp"

namespace c10d {
class Store;
}

namespace skein::core {

struct Membership {
  std::int64_t generation = 0;
  std::vector<int> members;      // ids, ascending; a member's rank is its index
  std::int64_t joiners_seen = 0; // replacements that asked to join before this generation was decided

  // The id's rank in this generation; -1 when it is not a member.
  SKEIN_EXPORT int rank_of(int id) const;
  bool has(int id) const { return rank_of(id) >= 0; }
  int leader() const { return members.empty() ? -1 : members.front(); }
  // Generation 0: ids 0..world_size-1, as the run started.
  SKEIN_EXPORT static Membership initial(int world_size);
  SKEIN_EXPORT std::string to_string() const;  // "generation 2: ids 0, 2, 3"
};

struct QuorumOptions {
  // After a failure, how long a survivor waits for the others (those not
  // reported lost) before the first whose wait ends decides without those
  // not yet there. Longer than a collective's timeout, or a survivor stuck
  // in one may come too late and be left out (it may then join again).
  std::chrono::milliseconds window{1000};
  // How often a waiting survivor looks at the store.
  std::chrono::milliseconds poll{5};
  // Ids a replacement gets start here (the run's first world size).
  int first_joiner_id = 0;
};

// A replacement's wait ended with the run: nothing to join any more.
struct RunClosed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class SKEIN_EXPORT Quorum {
 public:
  // `scope` keeps runs (and attempts) apart: the run id.
  Quorum(c10d::Store& store, const std::string& scope, QuorumOptions options);

  // Called by each survivor of `current` after a step failed in it: the next
  // generation's members, decided once for all. Whoever was not there within
  // the window is left out (a survivor that comes later reads a decision
  // without itself: it must leave, or ask to join). The ids of the last
  // generation each agreed on are kept, so that a process killed during the
  // agreement itself costs one more round, never a wrong decision.
  Membership after_failure(const Membership& current, int self);

  // Whoever watches the processes (a launcher's agent) says that `id` is
  // gone for good (it exited): survivors then stop waiting for it at once
  // instead of at the window's end.
  void report_lost(int id);

  // A replacement asks to join: its id (first_joiner_id + the order of asking).
  int ask_to_join();
  // Replacements that have asked so far (one store read).
  std::int64_t joiners_asked();
  // Every member of `current` calls it with the same `asked` (agreed through
  // a collective, as members may read joiners_asked() at different moments):
  // the next generation, `current` plus the replacements `asked` counts; the
  // members write it where the replacements wait for it.
  Membership grow(const Membership& current, std::int64_t asked);
  // A replacement with id `self` waits (up to `timeout`) for the generation
  // that takes it in; throws RunClosed when the run ended first.
  Membership wait_to_be_taken_in(int self, std::chrono::milliseconds timeout);
  // The run is over (its members finished): replacements waiting leave.
  void close();

  // The key prefix generation `g`'s process group keeps its keys under.
  std::string group_prefix(std::int64_t generation) const;

 private:
  std::string key(std::int64_t generation, const std::string& name) const;
  Membership decided(std::int64_t generation, const std::string& proposal);

  c10d::Store& store_;
  std::string scope_;
  QuorumOptions options_;
};

}  // namespace skein::core
