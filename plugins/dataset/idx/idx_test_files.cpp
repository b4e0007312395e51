#include "idx_test_files.hpp"

#include <zlib.h>

#include <fstream>
#include <stdexcept>

namespace idx_test {

void write_idx(const std::string& path, const std::vector<std::uint32_t>& dims,
               const std::vector<std::uint8_t>& data, bool gzip) {
  std::string bytes{'\0', '\0', '\x08', static_cast<char>(dims.size())};
  for (auto d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes += static_cast<char>((d >> shift) & 0xff);
  }
  bytes.append(reinterpret_cast<const char*>(data.data()), data.size());
  if (!gzip) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
    if (!out.flush()) throw std::runtime_error("cannot write " + path);
    return;
  }
  gzFile f = gzopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path);
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

void write_tiny_mnist(const std::string& dir, std::uint32_t train, std::uint32_t test, bool gzip) {
  const std::string ext = gzip ? ".gz" : "";
  auto make = [&](const std::string& prefix, std::uint32_t n) {
    std::vector<std::uint8_t> images(static_cast<std::size_t>(n) * 28 * 28), labels(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      labels[i] = static_cast<std::uint8_t>(i % 10);
      // A bright bar whose row depends on the class: learnable.
      for (int x = 0; x < 28; ++x) images[i * 784 + labels[i] * 2 * 28 + x] = 255;
    }
    write_idx(dir + "/" + prefix + "-images-idx3-ubyte" + ext, {n, 28, 28}, images, gzip);
    write_idx(dir + "/" + prefix + "-labels-idx1-ubyte" + ext, {n}, labels, gzip);
  };
  make("train", train);
  make("t10k", test);
}

}  // namespace idx_test
