// Fuzz target: history.json as --resume reads it from a checkpoint,
// History::load (JSON parsing, History::from_json, decode_nonfinite).
//
// Properties:
//  - History::load throws only std::runtime_error (its contract; resume
//    turns it into "checkpoint ... does not fit this run");
//  - a loaded history saves (dump) and loads again to the same text: what
//    a resumed run writes is what it read, NaN and infinities included.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "fuzz_support.hpp"
#include "skein/history.hpp"

namespace {
skein_fuzz::MemFile* file = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  file = new skein_fuzz::MemFile("history.json");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  file->write(data, size);
  skein::History h;
  if (skein_fuzz::error_of<std::runtime_error>("History::load", [&] { h = skein::History::load(file->path()); }))
    return 0;

  skein_fuzz::must_not_throw("saving and reloading a loaded history", [&] {
    // Reading back what was loaded, as the trainer and callbacks do.
    for (std::size_t i = 0; i < h.size(); ++i) {
      const auto& epoch = h.epochs()[i];
      if (!epoch.is_object() || !epoch.contains("batches") || !epoch["batches"].is_array())
        skein_fuzz::finding("History::load accepted an epoch without a batches list");
      (void)h.get(static_cast<long>(i), "valid_loss");
    }
    if (!h.empty()) (void)h.get(-1, "epoch");
    const std::string text = h.dump();
    file->write(text);
    const std::string again = skein::History::load(file->path()).dump();
    if (again != text) skein_fuzz::finding("history changes when saved and loaded:\n" + text + "\nvs\n" + again);
  });
  return 0;
}
