#include "skein/training/store/quorum.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "skein/detail/json.hpp"
#include "skein/io/store.hpp"
#include "skein/training/store/store_keys.hpp"

namespace skein::core {

namespace {

using Clock = std::chrono::steady_clock;

// Polls `done` every `poll` until it holds (true) or `deadline` passes
// (false). Polled, not store.wait(): libtorch 1.13's TCPStore wakes no
// waiter for a key compareSet made, and a timed-out wait leaves its client
// out of step with the server.
template <class Done>
bool poll_until(Clock::time_point deadline, std::chrono::milliseconds poll, Done done) {
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
  return true;
}

std::string membership_json(const Membership& m) {
  return nlohmann::json{{"generation", m.generation}, {"members", m.members}, {"joiners_seen", m.joiners_seen}}
      .dump();
}

Membership parse_membership(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  Membership m;
  m.generation = j.at("generation").get<std::int64_t>();
  m.members = j.at("members").get<std::vector<int>>();
  m.joiners_seen = j.at("joiners_seen").get<std::int64_t>();
  return m;
}

Membership next_of(const Membership& current) {
  Membership next;
  next.generation = current.generation + 1;
  next.joiners_seen = current.joiners_seen;
  return next;
}

}  // namespace

int Membership::rank_of(int id) const {
  const auto it = std::lower_bound(members.begin(), members.end(), id);
  return it != members.end() && *it == id ? static_cast<int>(it - members.begin()) : -1;
}

Membership Membership::initial(int world_size) {
  Membership m;
  for (int id = 0; id < world_size; ++id) m.members.push_back(id);
  return m;
}

std::string Membership::to_string() const {
  std::string s = "generation " + std::to_string(generation) + ": ids";
  for (std::size_t i = 0; i < members.size(); ++i) s += (i ? ", " : " ") + std::to_string(members[i]);
  return s;
}

Quorum::Quorum(c10d::Store& store, const std::string& scope, QuorumOptions options)
    : store_(store), scope_(scope), options_(options) {}

std::string Quorum::key(std::int64_t generation, const std::string& name) const {
  return store_key::quorum(scope_, generation, name);
}

std::string Quorum::group_prefix(std::int64_t generation) const { return key(generation, "group/"); }

// The first proposal for `generation` is its decision (compareSet sets a key
// that is not there yet and otherwise returns what is there). Nobody
// wait()s for that key (poll_until says why).
Membership Quorum::decided(std::int64_t generation, const std::string& proposal) {
  const std::vector<std::uint8_t> none;
  const std::vector<std::uint8_t> mine(proposal.begin(), proposal.end());
  const std::vector<std::uint8_t> value = store_.compareSet(key(generation, "members"), none, mine);
  return parse_membership(std::string(value.begin(), value.end()));
}

Membership Quorum::after_failure(const Membership& current, int self) {
  Membership next = next_of(current);
  const std::string decision = key(next.generation, "members");
  store_set(store_, key(next.generation, "alive/" + std::to_string(self)), "1");
  const auto arrived = store_.add(key(next.generation, "arrived"), 1);
  const auto alive = [&](int id) { return store_.check({key(next.generation, "alive/" + std::to_string(id))}); };
  // Everyone not reported lost has arrived: nothing more to wait for.
  const auto all_accounted = [&] {
    for (int id : current.members)
      if (!alive(id) && !store_.check({store_key::quorum_lost(scope_, id)})) return false;
    return true;
  };
  // The last of all to arrive decides at once; the others wait for a
  // decision until all are accounted for or the window closes, then propose
  // who is there (a decision already made wins over the proposal).
  if (arrived < static_cast<std::int64_t>(current.members.size()))
    poll_until(Clock::now() + options_.window, options_.poll,
               [&] { return store_.check({decision}) || all_accounted(); });
  for (int id : current.members)
    if (alive(id)) next.members.push_back(id);
  return decided(next.generation, membership_json(next));
}

void Quorum::close() { store_set(store_, store_key::quorum_closed(scope_), "1"); }

void Quorum::report_lost(int id) { store_set(store_, store_key::quorum_lost(scope_, id), "1"); }

int Quorum::ask_to_join() {
  const auto order = store_.add(store_key::quorum_joiners(scope_), 1) - 1;
  return options_.first_joiner_id + static_cast<int>(order);
}

// Read, not add(0): the engine's leader asks at every step, and a FileStore
// appends a record to its file for every add.
std::int64_t Quorum::joiners_asked() {
  const std::string key = store_key::quorum_joiners(scope_);
  return store_.check({key}) ? std::stoll(store_get(store_, key)) : 0;
}

Membership Quorum::grow(const Membership& current, std::int64_t asked) {
  Membership next = next_of(current);
  next.members = current.members;
  for (std::int64_t k = current.joiners_seen; k < asked; ++k)
    next.members.push_back(options_.first_joiner_id + static_cast<int>(k));
  std::sort(next.members.begin(), next.members.end());
  next.joiners_seen = std::max(asked, current.joiners_seen);
  const Membership result = decided(next.generation, membership_json(next));
  // Where each replacement taken in waits for it (every member writes the same).
  for (std::int64_t k = current.joiners_seen; k < result.joiners_seen; ++k) {
    const int id = options_.first_joiner_id + static_cast<int>(k);
    if (result.has(id))
      store_set(store_, store_key::quorum_taken_in(scope_, id), std::to_string(result.generation));
  }
  return result;
}

Membership Quorum::wait_to_be_taken_in(int self, std::chrono::milliseconds timeout) {
  const std::string taken_in = store_key::quorum_taken_in(scope_, self);
  const std::string closed = store_key::quorum_closed(scope_);
  if (!poll_until(Clock::now() + timeout, options_.poll, [&] { return store_.check({taken_in}) || store_.check({closed}); }))
    throw std::runtime_error("replacement " + std::to_string(self) + ": no generation took it in within " +
                             std::to_string(timeout.count()) + " ms");
  if (!store_.check({taken_in})) throw RunClosed("replacement " + std::to_string(self) + ": the run ended before it could join");
  const auto generation = std::stoll(store_get(store_, taken_in));
  return parse_membership(store_get(store_, key(generation, "members")));
}

}  // namespace skein::core
