#pragma once
// Memory allocation that suits training, set once per process before the
// first step (docs/BENCHMARKS.md, "Memory allocation").
//
// glibc's malloc serves blocks above its mmap threshold (128 KiB, raised
// only as far as the largest block freed so far) with mmap and gives them
// back with munmap, and trims the top of the heap when the free space there
// exceeds its trim threshold. A training step allocates and frees the same
// large activations and gradients every step, so by default it maps, faults
// in and unmaps them again each time: conv nets spent most of an epoch in the
// kernel that way. Tuned, the freed blocks stay in the heap for the next step.
#include <string>

#include "skein/detail/export.hpp"

namespace skein::core {

struct AllocatorTuning {
  bool tuned = false;
  std::string summary;  // one line for train.log
};

// Applies the tuning unless SKEIN_MALLOC=system, the user set glibc's own
// malloc variables (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_,
// MALLOC_TOP_PAD_, GLIBC_TUNABLES=glibc.malloc...), or malloc is not glibc's
// (jemalloc or tcmalloc through LD_PRELOAD). Idempotent: the first call
// decides. Throws ConfigError for an unknown SKEIN_MALLOC.
SKEIN_EXPORT const AllocatorTuning& tune_allocator_for_training();

}  // namespace skein::core
