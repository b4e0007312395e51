#pragma once
// NumPy's .npy format (numpy.save / numpy.load): format 1.0-3.0, C order,
// little-endian bool, int8-64, uint8 and float16-64 arrays.
#include <memory>
#include <string>

#include <torch/types.h>

#include "skein/detail/export.hpp"

namespace skein {

// Reads a .npy file into a tensor of the same dtype and shape. Throws
// std::runtime_error naming the file for a truncated file, Fortran order,
// object or big-endian arrays, and any dtype torch has no match for.
SKEIN_EXPORT torch::Tensor read_npy(const std::string& path);
// The same, memory-mapped instead of read: the tensor's data is the file's
// (read-only pages, shared with the page cache), so an array larger than
// memory can be indexed batch by batch. Do not write to it. MappedNpy adds
// the check that makes reading it safe while the file may change.
SKEIN_EXPORT torch::Tensor map_npy(const std::string& path);

// A .npy file mapped as map_npy does, kept open so that check() can tell
// whether it was truncated or rewritten in place since: reading a mapping
// past a truncated file's end kills the process with SIGBUS, naming nothing.
// (A new file renamed over the path is no change: the old one stays mapped.)
class SKEIN_EXPORT MappedNpy {
 public:
  explicit MappedNpy(const std::string& path);
  // The array; its data lives as long as the tensor (or a view of it) does.
  const torch::Tensor& tensor() const { return tensor_; }
  // Throws std::runtime_error naming the file when it is shorter than the
  // array or was modified since it was mapped. One fstat: call it before
  // reading rows of tensor(), and after, to know they are the mapped data.
  void check() const;

 private:
  struct File;  // the open file and its mapping
  std::shared_ptr<const File> file_;
  torch::Tensor tensor_;
};
// The same from the bytes of a file; `name` appears in errors.
SKEIN_EXPORT torch::Tensor parse_npy(const std::string& bytes, const std::string& name);

// A tensor as the bytes of a .npy file (format 1.0, C order).
SKEIN_EXPORT std::string npy_bytes(const torch::Tensor& tensor);

}  // namespace skein
