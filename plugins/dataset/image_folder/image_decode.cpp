#include "image_decode.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>
#include <memory>
#include <stdexcept>

#include <stb/stb_image.h>
#include <stb/stb_image_resize.h>

namespace skein_image {

namespace {

// A header may claim any size: images beyond this many pixels (16384 x 16384,
// 1 GiB decoded as RGBA) are refused before stb_image allocates anything.
constexpr std::int64_t kMaxPixels = std::int64_t{1} << 28;

void check_pixels(std::int64_t w, std::int64_t h, const std::string& path) {
  if (w * h > kMaxPixels)
    throw std::runtime_error(path + ": its header declares " + std::to_string(w) + "x" + std::to_string(h) +
                             " pixels, too large (at most " + std::to_string(kMaxPixels) + " pixels are read)");
}

// stb_image refuses a PNG over 1 GiB itself, but stbi_info then tries the
// other formats and reports "unknown image type": its size is read here.
void check_png_size(const unsigned char* b, std::size_t n, const std::string& path) {
  if (n < 24 || std::memcmp(b, "\x89PNG\r\n\x1a\n", 8) != 0 || std::memcmp(b + 12, "IHDR", 4) != 0) return;
  auto be32 = [&](std::size_t at) {
    return std::int64_t{b[at]} << 24 | std::int64_t{b[at + 1]} << 16 | std::int64_t{b[at + 2]} << 8 | b[at + 3];
  };
  check_pixels(be32(16), be32(20), path);
}

// The file's bytes in a buffer kept per thread: plain open/read/close costs
// a third less than stb's stdio reading, and small images are I/O-bound.
// Returns the number of bytes read into `buffer` (grown as needed).
std::size_t read_file(const std::string& path, std::vector<unsigned char>& buffer) {
  if (buffer.empty()) buffer.resize(1 << 16);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > INT32_MAX) {
    ::close(fd);
    throw std::runtime_error(path + ": too large an image file");
  }
  std::size_t size = 0;
  for (;;) {
    if (size == buffer.size()) {
      if (size > static_cast<std::size_t>(INT32_MAX)) {
        ::close(fd);
        throw std::runtime_error(path + ": too large an image file");
      }
      buffer.resize(buffer.size() * 2);
    }
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

// The image's size from its header, refused when it is too large; `unreadable`
// says what a file stb_image cannot read is.
void read_header(const std::vector<unsigned char>& bytes, std::size_t size, const std::string& path,
                 const char* unreadable, int& w, int& h, int& c) {
  check_png_size(bytes.data(), size, path);
  if (!stbi_info_from_memory(bytes.data(), static_cast<int>(size), &w, &h, &c))
    throw std::runtime_error(path + ": " + unreadable + " (" + stbi_failure_reason() + ")");
  check_pixels(w, h, path);
}

}  // namespace

Shape probe(const std::string& path) {
  int w = 0, h = 0, c = 0;
  thread_local std::vector<unsigned char> bytes;
  read_header(bytes, read_file(path, bytes), path, "not an image this dataset reads", w, h, c);
  // Gray with alpha counts as gray, RGBA as RGB: alpha is dropped.
  return Shape{c <= 2 ? 1 : 3, h, w, false};
}

void decode_into(const std::string& path, const Shape& shape, std::uint8_t* out) {
  int w = 0, h = 0, c = 0;
  const int channels = static_cast<int>(shape.channels);
  thread_local std::vector<unsigned char> bytes;
  const std::size_t size = read_file(path, bytes);
  read_header(bytes, size, path, "cannot decode", w, h, c);
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
