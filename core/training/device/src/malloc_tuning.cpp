#include "skein/training/device/malloc_tuning.hpp"

#include <dlfcn.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "skein/errors.hpp"
#include "skein/training/device/large_blocks.hpp"

namespace skein::core {

namespace {

// Blocks below this are never given to mmap; the heap keeps up to this much
// free memory at its top instead of returning it. Chosen by measurement
// (docs/BENCHMARKS.md, "Memory allocation"): any value above a step's largest
// activation block does; these stay below the address space a 64-bit
// process can spare.
constexpr int kMmapThreshold = 1 << 30;       // 1 GiB
constexpr int kTrimThreshold = 1 << 30;       // 1 GiB

bool user_set_glibc_malloc() {
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"})
    if (std::getenv(name)) return true;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables && std::strstr(tunables, "glibc.malloc.") != nullptr;
}

// The file malloc comes from: libc.so.6 unless an allocator was preloaded.
std::string malloc_library() {
  Dl_info info{};
  void* address = reinterpret_cast<void*>(&::malloc);
  if (dladdr(address, &info) == 0 || !info.dli_fname) return "";
  return info.dli_fname;
}

AllocatorTuning decide() {
  const char* mode = std::getenv("SKEIN_MALLOC");
  const std::string choice = mode ? mode : "tuned";
  if (choice != "tuned" && choice != "system")
    throw ConfigError("SKEIN_MALLOC='" + choice + "': must be tuned (the default) or system");
  if (choice == "system") return {false, "malloc: glibc defaults (SKEIN_MALLOC=system)"};
  const std::string library = malloc_library();
  if (library.find("libc.so") == std::string::npos)
    return {false, "malloc: " + (library.empty() ? std::string("not glibc's") : library) + ", left as it is"};
  if (user_set_glibc_malloc()) return {false, "malloc: glibc, as set by the environment"};
  const bool ok = mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 && mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
  if (!ok) return {false, "malloc: glibc defaults (mallopt refused the training settings)"};
  use_large_block_allocator();
  return {true, "malloc: glibc, tuned for training (freed blocks stay in the heap; tensors of 32 MiB or more "
                "are mapped apart and reused; SKEIN_MALLOC=system turns this off)"};
}

}  // namespace

const AllocatorTuning& tune_allocator_for_training() {
  static std::once_flag once;
  static AllocatorTuning tuning;
  static std::string error;
  std::call_once(once, [] {
    try {
      tuning = decide();
    } catch (const ConfigError& e) {
      error = e.what();
    }
  });
  if (!error.empty()) throw ConfigError(error);
  return tuning;
}

}  // namespace skein::core
