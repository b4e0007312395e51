#pragma once
// libtorch's CPU allocator in a training process whose malloc is tuned
// (allocator.hpp), for tensors of kLargeBlockBytes or more: each is a mapping
// of its own (transparent huge pages where the kernel offers them), kept
// when freed for the next request of the same size (rounded up to 2 MiB). A
// request that no kept block fits maps a new one, first giving the oldest
// kept blocks back to the system as far as needed to keep all it has mapped
// within twice the most its tensors ever held at once. Smaller tensors go to
// the allocator it replaced (malloc).
//
// Why: the tuned heap keeps freed blocks for the next step, which is what a
// step's activations want, but a large block freed in the heap (a 5120 x
// 5120 matrix's gradient, 105 MB) is soon split by small requests, so the
// next large one extends the heap: a sharded run's rank grew by 100 MB steps
// to 30 % over what it had allocated (docs/BENCHMARKS.md, section 12).
// Large tensors recur with the same sizes every step, so a kept block is
// taken again as it was, without a page fault, and never fragments the heap.
#include <cstddef>

#include "skein/detail/export.hpp"

namespace skein::core {

constexpr std::size_t kLargeBlockBytes = std::size_t{32} << 20;  // 32 MiB

// Makes it libtorch's CPU allocator, once per process (later calls do nothing).
SKEIN_EXPORT void use_large_block_allocator();

// While one lives, tensors of `min_bytes` or more are mappings of their own
// too, those under kLargeBlockBytes unmapped as soon as freed (not kept). For
// tensors made once and soon replaced, which would leave holes in the heap
// that training then touches again: the states a sharded optimizer's first
// step makes of its pieces, laid out whole right after (optimizer_shards.hpp).
// Nothing without use_large_block_allocator. Not nested; one thread's.
class SKEIN_EXPORT MappedApart {
 public:
  explicit MappedApart(std::size_t min_bytes);
  ~MappedApart();
  MappedApart(const MappedApart&) = delete;
  MappedApart& operator=(const MappedApart&) = delete;
};

// Its blocks now (both 0 before use_large_block_allocator).
struct LargeBlocks {
  std::size_t live_bytes = 0;  // in tensors
  std::size_t kept_bytes = 0;  // freed, kept for the next request of their size
  std::size_t apart_bytes = 0;  // in tensors mapped apart by a MappedApart
};
SKEIN_EXPORT LargeBlocks large_blocks();

}  // namespace skein::core
