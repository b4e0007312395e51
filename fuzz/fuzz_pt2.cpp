// Fuzz target: .pt2 archives as the pt2 model loads them,
// skein::ExportedModel's constructor (zip reader, program JSON, weights,
// graph binding). Built only against a libtorch with torch.export's schema
// (SKEIN_TORCH=pypi scripts/fuzz.sh); seeds: tests/python/pt2.py's archives.
//
// Properties:
//  - loading throws only skein::OptionError (one line naming the file);
//  - a program it accepts lists its operators.
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "fuzz_support.hpp"
#include "skein/errors.hpp"
#include "skein/io/exported_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The model reads a file: one per process, rewritten for each input.
  static const std::string path = "/tmp/skein-fuzz-pt2-" + std::to_string(::getpid()) + ".pt2";
  static const struct Removed {
    ~Removed() { ::unlink(path.c_str()); }
  } removed;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  skein_fuzz::error_of<skein::OptionError>("loading a .pt2", [&] {
    skein::ExportedModel model(path, "model 'pt2'");
    if (model.operators().empty() && !model.parameters().empty())
      skein_fuzz::finding("a program with parameters and no operator was accepted");
  });
  return 0;
}
