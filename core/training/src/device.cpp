#include "skein/training/device.hpp"

#include <ATen/Context.h>
#include <torch/cuda.h>

#include "skein/host/config_error.hpp"
#include "skein/training/tensor_bytes.hpp"

namespace skein::core {

namespace {

constexpr const char* kAllowed = "auto, cpu, cuda or cuda:N";

[[noreturn]] void refuse_spelling(const std::string& spec, const DeviceSetting& setting) {
  throw ConfigPathError("device", setting.name + ": must be " + std::string(kAllowed) + ", got '" + spec + "'");
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

std::string no_cuda_reason() {
  return cuda_compiled() ? "no CUDA device is visible (CUDA_VISIBLE_DEVICES, the driver)"
                         : "this libtorch was built without CUDA";
}

}  // namespace

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
    throw ConfigPathError("device", setting.name + ": '" + spec + "' asked for, but " + no_cuda_reason() + "; " +
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
    throw ConfigPathError("device", setting.name + ": '" + spec + "' asked for, but " + std::to_string(visible) +
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
