// Fuzz target: the pickle rewriting that lets libtorch read state dicts
// saved by Python (OrderedDict), skein::plain_dict_pickle.
//
// Properties:
//  - it throws only std::runtime_error, on any bytes;
//  - its output is never longer than its input (it only leaves opcodes out
//    or replaces three opcodes by one), and rewriting it again changes nothing.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "fuzz_support.hpp"
#include "skein/torch_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  std::string out;
  if (skein_fuzz::error_of<std::runtime_error>("plain_dict_pickle",
                                               [&] { out = skein::plain_dict_pickle(in); }))
    return 0;
  if (out.size() > in.size()) skein_fuzz::finding("the rewritten pickle is longer than the input");
  skein_fuzz::must_not_throw("rewriting a rewritten pickle", [&] {
    if (skein::plain_dict_pickle(out) != out) skein_fuzz::finding("rewriting is not idempotent");
  });
  return 0;
}
