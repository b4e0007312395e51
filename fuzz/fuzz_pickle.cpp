// Fuzz target: the pickle rewriting that lets libtorch read state dicts
// saved by Python (OrderedDict), skein::plain_dict_pickle.
//
// Properties:
//  - it throws only std::runtime_error, on any bytes;
//  - its output is at most one byte per APPEND longer than its input (it
//    leaves opcodes out, replaces three opcodes by one, and writes APPEND as
//    MARK + APPENDS), and rewriting it again changes nothing.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "fuzz_support.hpp"
#include "skein/io/torch_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  std::string out;
  if (skein_fuzz::error_of<std::runtime_error>("plain_dict_pickle",
                                               [&] { out = skein::plain_dict_pickle(in); }))
    return 0;
  // Every APPEND opcode is an 'a' byte of the input (not every 'a' byte an APPEND).
  const auto appends = static_cast<std::size_t>(std::count(in.begin(), in.end(), 'a'));
  if (out.size() > in.size() + appends)
    skein_fuzz::finding("the rewritten pickle grew by more than one byte per APPEND");
  skein_fuzz::must_not_throw("rewriting a rewritten pickle", [&] {
    if (skein::plain_dict_pickle(out) != out) skein_fuzz::finding("rewriting is not idempotent");
  });
  return 0;
}
