// Fuzz target: IDX files, as the idx dataset plugin reads them
// (plugins/dataset/idx/idx_file.cpp): read_idx on a file (gzip or plain,
// through zlib's gzread) and parse_idx on the same bytes in memory.
//
// Properties:
//  - errors are std::runtime_error only;
//  - an accepted array holds exactly product(dims) bytes, with the product
//    computed without overflow (the plugin sizes its tensors from dims);
//  - for a plain (not gzip) file, read_idx and parse_idx agree.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "idx_file.hpp"

namespace {

skein_fuzz::MemFile* file = nullptr;

struct Outcome {
  bool ok = false;
  skein_idx::IdxArray array;
  std::string error;  // without the leading file name
};

template <class F>
Outcome attempt(F&& f, const std::string& name, const char* what) {
  Outcome o;
  const auto error = skein_fuzz::error_of<std::runtime_error>(what, [&] { o.array = f(); });
  o.ok = !error;
  if (error) {
    if (error->rfind(name + ": ", 0) != 0) skein_fuzz::finding(std::string(what) + ": error does not name the file: " + *error);
    o.error = error->substr(name.size() + 2);
  }
  return o;
}

void check_array(const skein_idx::IdxArray& a, const char* what) {
  if (a.dims.empty() || a.dims.size() > 255) skein_fuzz::finding(std::string(what) + ": bad number of dimensions");
  std::uint64_t product = 1;
  for (auto d : a.dims) {
    if (d < 0 || d > 0xffffffffLL) skein_fuzz::finding(std::string(what) + ": dimension out of range");
    if (__builtin_mul_overflow(product, static_cast<std::uint64_t>(d), &product))
      skein_fuzz::finding(std::string(what) + ": accepted dims whose product overflows");
  }
  if (product != a.data.size())
    skein_fuzz::finding(std::string(what) + ": product of dims " + std::to_string(product) + " != " +
                        std::to_string(a.data.size()) + " data bytes");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  file = new skein_fuzz::MemFile("images-idx3-ubyte");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::uint8_t> bytes(data, data + size);
  const std::string memory_name = "fuzz.idx";
  Outcome in_memory = attempt([&] { return skein_idx::parse_idx(bytes, memory_name); }, memory_name, "parse_idx");
  if (in_memory.ok) check_array(in_memory.array, "parse_idx");

  file->write(data, size);
  Outcome from_file = attempt([&] { return skein_idx::read_idx(file->path()); }, file->path(), "read_idx");
  if (from_file.ok) check_array(from_file.array, "read_idx");

  const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (!gzip) {
    if (in_memory.ok != from_file.ok || in_memory.error != from_file.error)
      skein_fuzz::finding("read_idx and parse_idx disagree: '" + from_file.error + "' vs '" + in_memory.error + "'");
    if (in_memory.ok && (in_memory.array.dims != from_file.array.dims || in_memory.array.data != from_file.array.data))
      skein_fuzz::finding("read_idx and parse_idx return different arrays");
  }
  return 0;
}
