#pragma once
// Image files to pixels, with Debian's stb_image (libstb-dev).
#include <cstdint>
#include <string>

namespace skein_image {

struct Shape {
  std::int64_t channels = 0, height = 0, width = 0;
  bool resize = false;  // resize to height x width (else the file must have that size)
};

// The shape of an image file without decoding its pixels. Throws
// std::runtime_error naming the file when it is not an image stb reads.
Shape probe(const std::string& path);

// Decodes `path` into `out` (height x width x channels bytes, row-major),
// converting channels and resizing as `shape` says. Thread-safe. Throws
// std::runtime_error naming the file.
void decode_into(const std::string& path, const Shape& shape, std::uint8_t* out);

}  // namespace skein_image
