// Writes an IDX image set (default: Fashion-MNIST's training set) as an
// image folder, OUT/<label>/<index>.png, for the image_folder benchmark.
// With --copies K, each image appears K times (hard links to one file), so
// the folder grows K-fold without K-fold disk.
//
//   make_image_folder --images FILE --labels FILE --out DIR [--copies K] [--limit N]
#include <cstdio>
#include <iostream>
#include <string>

#include <boost/filesystem.hpp>
#include <stb/stb_image_write.h>

#include "idx_file.hpp"

namespace fs = boost::filesystem;

int main(int argc, char** argv) {
  std::string images = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  std::string labels = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz";
  std::string out;
  long copies = 1, limit = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--images") images = value;
    else if (flag == "--labels") labels = value;
    else if (flag == "--out") out = value;
    else if (flag == "--copies") copies = std::stol(value);
    else if (flag == "--limit") limit = std::stol(value);
    else return std::cerr << "unknown flag " << flag << "\n", 2;
  }
  if (out.empty() || copies < 1) return std::cerr << "usage: see the top of make_image_folder.cpp\n", 2;
  const auto x = skein_idx::read_idx(images);
  const auto y = skein_idx::read_idx(labels);
  const auto h = static_cast<int>(x.dims.at(1)), w = static_cast<int>(x.dims.at(2));
  long n = x.dims.at(0);
  if (limit > 0 && limit < n) n = limit;
  for (long i = 0; i < n; ++i) {
    const fs::path dir = fs::path(out) / std::to_string(y.data.at(static_cast<std::size_t>(i)));
    fs::create_directories(dir);
    char name[32];
    std::snprintf(name, sizeof name, "%06ld.png", i);
    const fs::path first = dir / name;
    if (!stbi_write_png(first.c_str(), w, h, 1, &x.data[static_cast<std::size_t>(i) * h * w], w))
      return std::cerr << "cannot write " << first << "\n", 1;
    for (long c = 1; c < copies; ++c) {
      std::snprintf(name, sizeof name, "%06ld_%ld.png", i, c);
      fs::create_hard_link(first, dir / name);
    }
  }
  std::cout << n * copies << " images in " << out << "\n";
  return 0;
}
