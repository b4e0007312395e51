#include "image_decode.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>
#include <memory>
#include <stdexcept>

#include <stb/stb_image.h>
#include <stb/stb_image_resize.h>

namespace skein_image {

Shape probe(const std::string& path) {
  int w = 0, h = 0, c = 0;
  if (!stbi_info(path.c_str(), &w, &h, &c))
    throw std::runtime_error(path + ": not an image this dataset reads (" + stbi_failure_reason() + ")");
  // Gray with alpha counts as gray, RGBA as RGB: alpha is dropped.
  return Shape{c <= 2 ? 1 : 3, h, w, false};
}

namespace {

// The file's bytes in a buffer kept per thread: plain open/read/close costs
// a third less than stb's stdio reading, and small images are I/O-bound.
// Returns the number of bytes read into `buffer` (grown as needed).
std::size_t read_file(const std::string& path, std::vector<unsigned char>& buffer) {
  if (buffer.empty()) buffer.resize(1 << 16);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open (" + std::strerror(errno) + ")");
  std::size_t size = 0;
  for (;;) {
    if (size == buffer.size()) buffer.resize(buffer.size() * 2);
    const ssize_t n = ::read(fd, buffer.data() + size, buffer.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      if (n < 0) throw std::runtime_error(path + ": cannot read (" + std::strerror(err) + ")");
      break;
    }
    size += static_cast<std::size_t>(n);
  }
  return size;
}

}  // namespace

void decode_into(const std::string& path, const Shape& shape, std::uint8_t* out) {
  int w = 0, h = 0, c = 0;
  const int channels = static_cast<int>(shape.channels);
  thread_local std::vector<unsigned char> bytes;
  const std::size_t size = read_file(path, bytes);
  if (size > static_cast<std::size_t>(INT32_MAX)) throw std::runtime_error(path + ": too large an image file");
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
      stbi_load_from_memory(bytes.data(), static_cast<int>(size), &w, &h, &c, channels), stbi_image_free);
  if (!pixels) throw std::runtime_error(path + ": cannot decode (" + std::string(stbi_failure_reason()) + ")");
  if (w == shape.width && h == shape.height) {
    std::memcpy(out, pixels.get(), static_cast<std::size_t>(w) * h * channels);
    return;
  }
  if (!shape.resize)
    throw std::runtime_error(path + ": " + std::to_string(w) + "x" + std::to_string(h) + " pixels, the others " +
                             std::to_string(shape.width) + "x" + std::to_string(shape.height) +
                             " (set the size option to resize them all)");
  if (!stbir_resize_uint8(pixels.get(), w, h, 0, out, static_cast<int>(shape.width), static_cast<int>(shape.height), 0,
                          channels))
    throw std::runtime_error(path + ": cannot resize");
}

}  // namespace skein_image
