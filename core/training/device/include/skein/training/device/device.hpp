#pragma once
#include <cstdint>
// The device a process trains on, from the config's "device" key:
//   "auto"   CUDA when libtorch has it and a device is visible, else the CPU
//   "cpu"
//   "cuda"   the device of this process's LOCAL_RANK (one process per GPU, as
//            torchrun and `skein train --nproc-per-node` start them)
//   "cuda:N" device N, whatever the rank
// The one place that decides it; everything else asks RunInfo::device.
#include <string>

#include <torch/types.h>

#include "skein/detail/export.hpp"
#include "skein/run.hpp"

namespace skein::core {

struct DeviceChoice {
  torch::Device device = torch::kCPU;
  std::string why;  // for the log: "auto: no CUDA device visible"
};

// How refusals name the setting and what to do instead: the config's
// "device" for training; export's and predict's --device flag, which run a
// trained model.
struct DeviceSetting {
  std::string name = run_key::kDevice;
  std::string on_the_cpu = "use \"auto\" or \"cpu\" to train on the CPU";
};
// The wording for export and predict.
SKEIN_EXPORT DeviceSetting device_flag_of_a_command();

// Checks the spelling of a "device" value (no device is looked at): throws
// ConfigPathError at "device" naming the value.
SKEIN_EXPORT void check_device_spec(const std::string& spec, const DeviceSetting& setting = {});

// The device `spec` means for the process `run` describes. Throws
// ConfigPathError at "device", one line naming the missing device, when it
// asks for CUDA that this libtorch or machine does not have.
SKEIN_EXPORT DeviceChoice choose_device(const std::string& spec, const RunInfo& run,
                                        const DeviceSetting& setting = {});

// The CUDA versions that decide whether a GPU is usable, as the driver API
// writes them (13000: 13.0): the one the loaded libtorch was built with (0:
// none), and the newest the NVIDIA driver (`driver_library`, loaded by name
// as the CUDA runtime loads it) supports (-1: no driver; 0: it did not say).
struct CudaVersions {
  int libtorch = 0;
  int driver = -1;
};
SKEIN_EXPORT CudaVersions cuda_versions(const std::string& driver_library = "libcuda.so.1");
// Why a libtorch with CUDA sees no device, for train.log's Device line and
// the error of "device": "cuda": no driver, a driver too old for the CUDA
// this libtorch was built with (the driver's and the needed version), or
// none visible (`visible_devices`: CUDA_VISIBLE_DEVICES, null when unset).
SKEIN_EXPORT std::string no_cuda_device_reason(const CudaVersions& versions, const char* visible_devices);

// The state of the default generator of `run`'s CUDA device, as bytes
// ("" when the run is on the CPU), and its inverse (nothing on the CPU).
SKEIN_EXPORT std::string device_generator_state(const RunInfo& run);
SKEIN_EXPORT void set_device_generator_state(const RunInfo& run, const torch::Tensor& state);

// `seed` and `stream` mixed into one reproducible seed (splitmix64's steps):
// a batch's fetch seed, a rank's generator seed.
SKEIN_EXPORT std::uint64_t mixed_seed(std::uint64_t seed, std::uint64_t stream);
// Seeds this process's CPU generator and, on CUDA, its device's with `seed`.
SKEIN_EXPORT void seed_generators(const RunInfo& run, std::uint64_t seed);

}  // namespace skein::core
