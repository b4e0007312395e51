#include "skein/training/device/device.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <regex>

#include <ATen/Context.h>
#include <ATen/Version.h>
#include <torch/cuda.h>

#include "skein/host/config_error.hpp"
#include "skein/training/device/tensor_bytes.hpp"

namespace skein::core {

namespace {

constexpr const char* kAllowed = "auto, cpu, cuda or cuda:N";

[[noreturn]] void refuse_spelling(const std::string& spec, const DeviceSetting& setting) {
  throw ConfigPathError(run_key::kDevice, setting.name + ": must be " + std::string(kAllowed) + ", got '" + spec + "'");
}

// N of "cuda:N", or -1 for "cuda"; throws for anything else starting "cuda".
int cuda_index(const std::string& spec, const DeviceSetting& setting) {
  if (spec == "cuda") return -1;
  const std::string digits = spec.substr(5);
  if (spec.rfind("cuda:", 0) != 0 || digits.empty() || digits.size() > 4 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    refuse_spelling(spec, setting);
  return std::stoi(digits);
}

bool cuda_compiled() { return at::globalContext().hasCUDART(); }

// A CUDA version as the driver API gives it (12020: 12.2) in words.
std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string no_cuda_reason() {
  return cuda_compiled() ? no_cuda_device_reason(cuda_versions(), std::getenv("CUDA_VISIBLE_DEVICES"))
                         : "this libtorch was built without CUDA";
}

}  // namespace

std::string no_cuda_device_reason(const CudaVersions& v, const char* visible_devices) {
  if (v.driver < 0) return "no NVIDIA driver was found (libcuda.so.1 does not load)";
  // A driver runs the CUDA runtimes of its major version (minor version compatibility).
  if (v.libtorch > 0 && v.driver < v.libtorch / 1000 * 1000)
    return "the NVIDIA driver supports CUDA up to " + cuda_version_text(v.driver) + ", this libtorch needs CUDA " +
           cuda_version_text(v.libtorch) + " (a newer driver, or a libtorch built for the CUDA the driver has: " +
           "docs/user-guide.md, \"GPUs\")";
  return std::string("no CUDA device is visible (") +
         (visible_devices ? "CUDA_VISIBLE_DEVICES='" + std::string(visible_devices) + "'" : "the driver found none") +
         ")";
}

CudaVersions cuda_versions(const std::string& driver_library) {
  CudaVersions v;
  // libtorch's own build summary (the library loaded, not the headers built against).
  std::smatch m;
  const std::string config = at::show_config();
  if (std::regex_search(config, m, std::regex("CUDA_VERSION=([0-9]+)\\.([0-9]+)")))
    v.libtorch = std::stoi(m[1]) * 1000 + std::stoi(m[2]) * 10;
  // The driver's: its library is loaded by name, as the CUDA runtime loads it.
  void* driver = ::dlopen(driver_library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!driver) return v;
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(::dlsym(driver, "cuDriverGetVersion"));
  int version = 0;
  v.driver = get && get(&version) == 0 ? version : 0;
  return v;  // kept loaded: the CUDA runtime uses the same library
}

DeviceSetting device_flag_of_a_command() { return {"--device", "use --device cpu to run the model on the CPU"}; }

void check_device_spec(const std::string& spec, const DeviceSetting& setting) {
  if (spec == "auto" || spec == "cpu") return;
  if (spec.rfind("cuda", 0) == 0) {
    cuda_index(spec, setting);
    return;
  }
  refuse_spelling(spec, setting);
}

DeviceChoice choose_device(const std::string& spec, const RunInfo& run, const DeviceSetting& setting) {
  check_device_spec(spec, setting);
  if (spec == "cpu") return {torch::kCPU, "cpu"};
  const auto visible = static_cast<int>(torch::cuda::device_count());
  if (spec == "auto" && visible == 0) return {torch::kCPU, "auto: " + no_cuda_reason()};
  if (visible == 0)
    throw ConfigPathError(run_key::kDevice, setting.name + ": '" + spec + "' asked for, but " + no_cuda_reason() + "; " +
                                        setting.on_the_cpu);
  int index = cuda_index(spec == "auto" ? std::string("cuda") : spec, setting);
  std::string why = spec;
  if (index < 0) {
    // One process per device; several processes share one when there are
    // more processes on the node than devices.
    index = run.local_rank % visible;
    why += ": LOCAL_RANK " + std::to_string(run.local_rank) + " of " + std::to_string(visible) +
           " visible CUDA device" + (visible > 1 ? "s" : "");
  } else if (index >= visible) {
    throw ConfigPathError(run_key::kDevice, setting.name + ": '" + spec + "' asked for, but " + std::to_string(visible) +
                                        " CUDA device" + (visible > 1 ? "s are" : " is") + " visible (0 to " +
                                        std::to_string(visible - 1) + ")");
  }
  return {torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index)), why};
}

std::string device_generator_state(const RunInfo& run) {
  const torch::Device device(run.device);
  if (!device.is_cuda()) return {};
  return bytes_of(at::globalContext().defaultGenerator(device).get_state());
}

std::uint64_t mixed_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void seed_generators(const RunInfo& run, std::uint64_t seed) {
  at::Generator cpu = at::detail::getDefaultCPUGenerator();  // handles to the global generators
  cpu.set_current_seed(seed);
  const torch::Device device(run.device);
  if (!device.is_cuda()) return;
  at::Generator cuda = at::globalContext().defaultGenerator(device);
  cuda.set_current_seed(seed);
}

void set_device_generator_state(const RunInfo& run, const torch::Tensor& state) {
  const torch::Device device(run.device);
  if (!device.is_cuda()) return;
  at::Generator generator = at::globalContext().defaultGenerator(device);  // a handle to the device's own
  generator.set_state(state);
}

}  // namespace skein::core
