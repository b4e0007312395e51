#pragma once
// NumPy's .npy format (numpy.save / numpy.load): format 1.0-3.0, C order,
// little-endian bool, int8-64, uint8 and float16-64 arrays.
#include <string>

#include <torch/types.h>

#include "skein/export.hpp"

namespace skein {

// Reads a .npy file into a tensor of the same dtype and shape. Throws
// std::runtime_error naming the file for a truncated file, Fortran order,
// object or big-endian arrays, and any dtype torch has no match for.
SKEIN_EXPORT torch::Tensor read_npy(const std::string& path);
// The same, memory-mapped instead of read: the tensor's data is the file's
// (read-only pages, shared with the page cache), so an array larger than
// memory can be indexed batch by batch. Do not write to it.
SKEIN_EXPORT torch::Tensor map_npy(const std::string& path);
// The same from the bytes of a file; `name` appears in errors.
SKEIN_EXPORT torch::Tensor parse_npy(const std::string& bytes, const std::string& name);

// A tensor as the bytes of a .npy file (format 1.0, C order).
SKEIN_EXPORT std::string npy_bytes(const torch::Tensor& tensor);

}  // namespace skein
