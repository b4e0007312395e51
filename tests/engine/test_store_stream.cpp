#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "skein/training/store/store_stream.hpp"

// Bytes through a store in chunks, paced by the reader (a HashStore: the
// same c10d::Store calls as the run's TCPStore, in one process).
BOOST_AUTO_TEST_SUITE(store_stream)

namespace {

std::vector<std::uint8_t> pattern(std::size_t n) {
  std::vector<std::uint8_t> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>(i * 7 + i / 251);
  return bytes;
}

std::string chunk_key(long k) { return "s/chunk/" + std::to_string(k); }

}  // namespace

BOOST_AUTO_TEST_CASE(the_bytes_arrive_whole_in_order_with_at_most_two_chunks_ahead) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->setTimeout(std::chrono::seconds(60));
  const auto sent = pattern(10 * 16 + 5);  // 11 chunks of 16, the last one short
  std::thread writer([&] {
    skein::core::StoreStreamWriter out(*store, "s", 16);
    for (std::size_t at = 0; at < sent.size(); at += 3)  // written in odd sizes
      out.write(sent.data() + at, std::min<std::size_t>(3, sent.size() - at));
    out.close();
  });
  std::vector<std::uint8_t> received;
  long chunks = 0;
  bool paced = true;
  skein::core::read_store_stream(*store, "s", [&](const std::vector<std::uint8_t>& chunk) {
    // Chunk k is taken and k + 2 let go: k + 3 cannot have been sent yet.
    paced = paced && !store->check({chunk_key(chunks + 3)});
    received.insert(received.end(), chunk.begin(), chunk.end());
    ++chunks;
  });
  writer.join();
  BOOST_TEST(paced);
  BOOST_TEST(chunks == 11);
  BOOST_TEST(received == sent);
  BOOST_TEST(store->getNumKeys() == 0);  // nothing left behind
}

BOOST_AUTO_TEST_CASE(an_empty_stream_ends_at_once) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->setTimeout(std::chrono::seconds(60));
  std::thread writer([&] { skein::core::StoreStreamWriter(*store, "s", 16).close(); });
  long chunks = 0;
  skein::core::read_store_stream(*store, "s", [&](const std::vector<std::uint8_t>&) { ++chunks; });
  writer.join();
  BOOST_TEST(chunks == 0);
  BOOST_TEST(store->getNumKeys() == 0);
}

// A reader that never comes: the writer's wait ends at the store's timeout
// with an error, not a hang.
BOOST_AUTO_TEST_CASE(a_writer_without_a_reader_fails_at_the_timeout) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->setTimeout(std::chrono::milliseconds(200));
  skein::core::StoreStreamWriter out(*store, "s", 16);
  BOOST_CHECK_THROW(out.close(), std::exception);
}

BOOST_AUTO_TEST_SUITE_END()
