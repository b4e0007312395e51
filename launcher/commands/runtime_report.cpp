// What `skein --version` says of the libtorch this process runs with. Read
// from the loaded library itself (at::show_config() is libtorch's own build
// summary), so a libtorch swapped under the build shows as such.
#include <dlfcn.h>

#include <cstring>
#include <regex>
#include <sstream>
#include <string>

#include <ATen/Version.h>
#include <torch/cuda.h>

#include "commands.hpp"
#include "skein/torch_compat/backends.hpp"

namespace {

// "KEY=value" of show_config()'s "Build settings: A=x, B=y, ..." line.
std::string build_setting(const std::string& config, const std::string& key) {
  std::smatch m;
  if (std::regex_search(config, m, std::regex("[ ,:]" + key + "=([^,\n]*)"))) return m[1];
  return "";
}

// The directory of the loaded libtorch (the file that holds show_config).
std::string libtorch_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&at::show_config), &info) == 0 || !info.dli_fname) return "?";
  std::string path = info.dli_fname;
  return path.substr(0, path.find_last_of('/'));
}

}  // namespace

extern "C" int skein_runtime_report(char* out, int size) {
  const std::string config = at::show_config();
  const std::string cuda = build_setting(config, "USE_CUDA");
  std::ostringstream line;
  line << "libtorch " << build_setting(config, "TORCH_VERSION");
  if (cuda == "1" || cuda == "ON")
    line << " with CUDA " << build_setting(config, "CUDA_VERSION") << " (" << static_cast<int>(torch::cuda::device_count())  // an int8_t in 2.x
         << " GPUs visible)";
  else
    line << ", CPU only";
  line << ", distributed backends " << SKEIN_DISTRIBUTED_BACKENDS << ", from " << libtorch_dir();
  const std::string text = line.str();
  if (size <= 0) return static_cast<int>(text.size());
  std::strncpy(out, text.c_str(), static_cast<std::size_t>(size) - 1);
  out[size - 1] = '\0';
  return static_cast<int>(text.size());
}
