#include <boost/test/unit_test.hpp>

#include <future>
#include <thread>
#include <vector>

#include <boost/filesystem.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "skein/io/store.hpp"
#include "skein/training/store/quorum.hpp"

// Survivors agreeing on the next generation through a real TCPStore (a
// server and one client per "process", each a thread here; the same calls
// across processes are in test_live_recovery).
BOOST_AUTO_TEST_SUITE(quorum)

namespace {

using skein::core::Membership;
using skein::core::Quorum;
using skein::core::QuorumOptions;

struct Stores {
  c10::intrusive_ptr<c10d::TCPStore> server;
  Stores() { server = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", skein::tcp_store_options(0, true, 1, 60)); }
  c10::intrusive_ptr<c10d::TCPStore> client() const {
    return c10::make_intrusive<c10d::TCPStore>("127.0.0.1",
                                               skein::tcp_store_options(server->getPort(), false, 1, 60));
  }
};

QuorumOptions options(int window_ms = 200) {
  QuorumOptions o;
  o.window = std::chrono::milliseconds(window_ms);
  o.first_joiner_id = 3;
  return o;
}

// `ids` each call after_failure(current) on a store of their own, at once.
std::vector<Membership> all_after_failure(const Stores& stores, const Membership& current,
                                          const std::vector<int>& ids, int window_ms = 200) {
  std::vector<std::future<Membership>> calls;
  for (int id : ids)
    calls.push_back(std::async(std::launch::async, [&, id] {
      auto store = stores.client();
      return Quorum(*store, "run", options(window_ms)).after_failure(current, id);
    }));
  std::vector<Membership> out;
  for (auto& c : calls) out.push_back(c.get());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(when_all_arrive_they_all_go_on_without_waiting_out_the_window) {
  Stores stores;
  // A window no test waits out: the last to arrive decides at once.
  const auto next = all_after_failure(stores, Membership::initial(3), {0, 1, 2}, 600000);
  for (const auto& m : next) {
    BOOST_TEST(m.generation == 1);
    BOOST_TEST(m.members == std::vector<int>({0, 1, 2}));
  }
}

BOOST_AUTO_TEST_CASE(one_lost_leaves_the_others_one_decision_and_a_latecomer_reads_it_without_itself) {
  Stores stores;
  const auto next = all_after_failure(stores, Membership::initial(3), {0, 2});
  for (const auto& m : next) {
    BOOST_TEST(m.generation == 1);
    BOOST_TEST(m.members == std::vector<int>({0, 2}));
    BOOST_TEST(m.rank_of(2) == 1);
    BOOST_TEST(m.leader() == 0);
  }
  // Id 1 was stopped and comes back: the decision is made, without it.
  const auto late = all_after_failure(stores, Membership::initial(3), {1});
  BOOST_TEST(late[0].members == std::vector<int>({0, 2}));
  BOOST_TEST(!late[0].has(1));
}

// One reported lost (by the launcher that saw it exit): no window waited out.
BOOST_AUTO_TEST_CASE(one_reported_lost_is_not_waited_for) {
  Stores stores;
  auto agent = stores.client();
  Quorum(*agent, "run", options()).report_lost(1);
  const auto next = all_after_failure(stores, Membership::initial(3), {0, 2}, 600000);
  for (const auto& m : next) BOOST_TEST(m.members == std::vector<int>({0, 2}));
}

// The same over a FileStore, the store skein train's launcher gives the
// processes of one machine (its compareSet and check are the file's own).
BOOST_AUTO_TEST_CASE(a_file_store_reaches_the_same_decision) {
  const std::string file = boost::filesystem::unique_path(boost::filesystem::temp_directory_path() /
                                                          "skein-quorum-%%%%%%%%").string();
  std::vector<std::future<Membership>> calls;
  for (int id : {0, 2})
    calls.push_back(std::async(std::launch::async, [&, id] {
      auto store = skein::open_file_store(file, 2, 60);
      return Quorum(*store, "run", options()).after_failure(Membership::initial(3), id);
    }));
  for (auto& c : calls) BOOST_TEST(c.get().members == std::vector<int>({0, 2}));
  boost::filesystem::remove(file);
}

BOOST_AUTO_TEST_CASE(the_leader_lost_the_lowest_survivor_leads) {
  Stores stores;
  const auto next = all_after_failure(stores, Membership::initial(3), {1, 2});
  for (const auto& m : next) BOOST_TEST(m.leader() == 1);
}

// A member that arrived and then died is in the generation it arrived for;
// the next failure (its group cannot be built) leaves it out.
BOOST_AUTO_TEST_CASE(one_lost_during_the_agreement_costs_one_more_round) {
  Stores stores;
  const Membership start = Membership::initial(3);
  std::vector<Membership> first;
  {
    // 1 arrives (its alive key is set) but never reads the decision.
    auto store = stores.client();
    skein::store_set(*store, "skein/quorum/run/1/alive/1", "1");
    store->add("skein/quorum/run/1/arrived", 1);
    first = all_after_failure(stores, start, {0, 2});
  }
  BOOST_TEST(first[0].members == std::vector<int>({0, 1, 2}));
  const auto second = all_after_failure(stores, first[0], {0, 2});
  for (const auto& m : second) {
    BOOST_TEST(m.generation == 2);
    BOOST_TEST(m.members == std::vector<int>({0, 2}));
  }
}

BOOST_AUTO_TEST_CASE(replacements_are_taken_in_by_the_generation_every_member_grows_to) {
  Stores stores;
  const Membership lost = all_after_failure(stores, Membership::initial(3), {0, 2})[0];
  auto joiner_store = stores.client();
  Quorum joiner(*joiner_store, "run", options());
  const int id = joiner.ask_to_join();
  BOOST_TEST(id == 3);  // the first id after the run's first world
  auto taken = std::async(std::launch::async,
                          [&] { return joiner.wait_to_be_taken_in(id, std::chrono::seconds(60)); });
  std::vector<std::future<Membership>> grown;
  for (int member : lost.members) {
    (void)member;
    grown.push_back(std::async(std::launch::async, [&] {
      auto store = stores.client();
      Quorum q(*store, "run", options());
      return q.grow(lost, q.joiners_asked());
    }));
  }
  for (auto& g : grown) {
    const Membership m = g.get();
    BOOST_TEST(m.generation == 2);
    BOOST_TEST(m.members == std::vector<int>({0, 2, 3}));
    BOOST_TEST(m.joiners_seen == 1);
  }
  const Membership in = taken.get();
  BOOST_TEST(in.generation == 2);
  BOOST_TEST(in.rank_of(3) == 2);
  // Nothing more asked: growing again adds no one.
  auto store = stores.client();
  BOOST_TEST(Quorum(*store, "run", options()).grow(in, 1).members == in.members);
}

BOOST_AUTO_TEST_CASE(a_replacement_nobody_takes_in_is_told_so_within_its_timeout) {
  Stores stores;
  auto store = stores.client();
  Quorum joiner(*store, "run", options());
  const int id = joiner.ask_to_join();
  BOOST_CHECK_EXCEPTION(joiner.wait_to_be_taken_in(id, std::chrono::milliseconds(50)), std::runtime_error,
                        [](const std::runtime_error& e) {
                          return std::string(e.what()) == "replacement 3: no generation took it in within 50 ms";
                        });
}

BOOST_AUTO_TEST_SUITE_END()
