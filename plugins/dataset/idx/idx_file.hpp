#pragma once
// Reading IDX files (the MNIST format), plain or gzip-compressed.
#include <cstdint>
#include <string>
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

// The same checks on the (already decompressed) bytes of an IDX file; `name`
// names it in errors. read_idx(path) is parse_idx(contents of path, path).
IdxArray parse_idx(const std::vector<std::uint8_t>& bytes, const std::string& name);

}  // namespace skein_idx
