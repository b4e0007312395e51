// Fuzz target: .npy files as skein predict (and npy datasets) read them,
// skein::parse_npy.
//
// Properties:
//  - parse_npy throws only std::runtime_error;
//  - an array it accepts, written again by npy_bytes, reads back equal.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "fuzz_support.hpp"
#include "skein/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  torch::Tensor t;
  if (skein_fuzz::error_of<std::runtime_error>("parse_npy", [&] { t = skein::parse_npy(bytes, "f.npy"); }))
    return 0;
  skein_fuzz::must_not_throw("writing and reading an accepted array", [&] {
    const torch::Tensor again = skein::parse_npy(skein::npy_bytes(t), "again.npy");
    if (again.scalar_type() != t.scalar_type() || again.sizes() != t.sizes() ||
        (t.numel() > 0 &&  // an empty tensor may have no storage at all
         std::memcmp(again.data_ptr(), t.data_ptr(), static_cast<std::size_t>(t.numel()) * t.element_size()) != 0))
      skein_fuzz::finding("an array changes when written and read again");
  });
  return 0;
}
