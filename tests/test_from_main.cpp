#define BOOST_TEST_MODULE from_main
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <future>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "skein/io/store.hpp"
#include "skein/training/run/from_main.hpp"
#include "rank_of.hpp"
#include "test_support.hpp"

// from_main: rank 0's value on every rank, through the run's store. Two
// ranks of one run in this process (threads) on one c10d HashStore.

using skein::core::from_main;
using test::contains;
using test::rank_of;

namespace {

skein::RunStore hash_store(std::chrono::milliseconds timeout) {
  skein::RunStore store;
  store.store = c10::make_intrusive<c10d::HashStore>();
  store.store->setTimeout(timeout);
  return store;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_rank_gets_rank_0s_value) {
  const skein::RunStore store = hash_store(std::chrono::seconds(60));
  // Rank 1 asks first and waits; rank 0 decides after.
  auto rank1 = std::async(std::launch::async, [&] { return from_main(store, rank_of(1, 3), "skein/k", "one's"); });
  auto rank2 = std::async(std::launch::async, [&] { return from_main(store, rank_of(2, 3), "skein/k", ""); });
  BOOST_TEST(from_main(store, rank_of(0, 3), "skein/k", "zero's") == "zero's");
  BOOST_TEST(rank1.get() == "zero's");
  BOOST_TEST(rank2.get() == "zero's");
  BOOST_TEST(skein::store_get(*store.store, "skein/k") == "zero's");
  // A rank that asks after rank 0 decided gets it too.
  BOOST_TEST(from_main(store, rank_of(1, 3), "skein/k", "late") == "zero's");
}

BOOST_AUTO_TEST_CASE(a_single_process_keeps_its_value_without_a_store) {
  BOOST_TEST(from_main(skein::RunStore{}, rank_of(0, 1), "skein/k", "mine") == "mine");
  // With a store but alone: nothing is written.
  const skein::RunStore store = hash_store(std::chrono::seconds(60));
  BOOST_TEST(from_main(store, rank_of(0, 1), "skein/k", "mine") == "mine");
  BOOST_TEST(!store.store->check({"skein/k"}));
}

BOOST_AUTO_TEST_CASE(a_value_rank_0_never_gives_is_an_error_naming_the_key_after_the_timeout) {
  const skein::RunStore store = hash_store(std::chrono::milliseconds(200));
  const auto start = std::chrono::steady_clock::now();
  const std::string message = test::message_of([&] { from_main(store, rank_of(1, 2), "skein/run_dir", ""); });
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST(contains(message, "rank 1: rank 0's value of 'skein/run_dir' did not arrive"), message);
  BOOST_TEST(contains(message, "within 0.2 s (SKEIN_TIMEOUT_S)"), message);
  BOOST_TEST(message.find('\n') == std::string::npos, message);
  BOOST_TEST(waited >= 0.15);
  BOOST_TEST(waited < 30.0);
}

BOOST_AUTO_TEST_CASE(another_rank_without_a_store_is_a_logic_error) {
  const std::string message =
      test::message_of<std::logic_error>([&] { from_main(skein::RunStore{}, rank_of(1, 2), "skein/k", ""); });
  BOOST_TEST(contains(message, "'skein/k'"), message);
}
