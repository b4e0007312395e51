#pragma once
// Reading IDX files (the MNIST format), plain or gzip-compressed.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace skein_idx {

struct IdxArray {
  std::vector<std::int64_t> dims;  // e.g. {60000, 28, 28}
  std::vector<std::uint8_t> data;  // row-major, product(dims) bytes
};

// Throws std::runtime_error naming the file: missing, bad magic, element type
// other than unsigned byte, truncated body or trailing bytes, or a header
// declaring more data than the file can hold (a plain file's size; 1032 times
// a gzip file's) or than `max_bytes`. Allocates no more than the header
// declares, and decompresses no further than one byte past it.
IdxArray read_idx(const std::string& path, std::uint64_t max_bytes = UINT64_MAX);

// Where read_idx_into puts the data as it is decompressed.
class IdxSink {
 public:
  virtual ~IdxSink() = default;
  // The header's dims, once the header passed every check; before any data.
  virtual void start(const std::vector<std::int64_t>& dims) = 0;
  // A buffer for the data's next bytes (at least 1 byte) and its size.
  virtual std::pair<std::uint8_t*, std::size_t> buffer() = 0;
  // The first `size` bytes of the last buffer now hold the data's next bytes.
  virtual void filled(std::size_t size) = 0;
};

// read_idx, with the data handed to `sink` piece by piece instead of
// collected in one array: the same checks and errors, thrown after `sink` may
// have received part of the data. read_idx(path) is read_idx_into with a sink
// that fills an IdxArray.
void read_idx_into(const std::string& path, std::uint64_t max_bytes, IdxSink& sink);

// The same checks on the (already decompressed) bytes of an IDX file; `name`
// names it in errors. read_idx(path) is parse_idx(contents of path, path).
IdxArray parse_idx(const std::vector<std::uint8_t>& bytes, const std::string& name);

}  // namespace skein_idx
