// Fuzz target: BatchLog::from_bytes, the binary form in which ranks exchange
// one epoch's batch records through the run's store (filestore, tcpstore).
//
// Properties:
//  - from_bytes throws only std::runtime_error on bad input;
//  - a decoded log encodes back to the same bytes (to_bytes), and commits
//    into a history (History::commit_batches, as the store backends do)
//    with one row per record of every rank.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "skein/history.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  skein::BatchLog log;
  if (skein_fuzz::error_of<std::runtime_error>("BatchLog::from_bytes", [&] { log = skein::BatchLog::from_bytes(bytes); }))
    return 0;
  skein_fuzz::must_not_throw("using a decoded BatchLog", [&] {
    if (log.to_bytes() != bytes) skein_fuzz::finding("BatchLog: to_bytes(from_bytes(b)) != b");
    for (const auto& c : log.cells())
      if (c.row >= log.rows() || c.key >= log.keys().size()) skein_fuzz::finding("BatchLog: cell out of range");
    // Rows without cells cost memory but no bytes: bound them so the fuzzer
    // explores decoding rather than allocation (see docs/fuzzing-and-sanitizers.md).
    if (log.rows() > (1u << 16)) return;
    skein::History h;
    h.new_epoch();
    h.commit_batches(std::vector<skein::BatchLog>{log, log});
    if (h.last()["batches"].size() != 2 * static_cast<std::size_t>(log.rows()))
      skein_fuzz::finding("History::commit_batches: wrong number of rows");
  });
  return 0;
}
