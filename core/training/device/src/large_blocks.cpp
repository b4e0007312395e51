#include "skein/training/device/large_blocks.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>

#include "skein/torch_compat/allocator.hpp"

namespace skein::core {

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kPage = std::size_t{4} << 10;

// The least a tensor mapped apart holds: kLargeBlockBytes, lowered while a
// MappedApart lives.
std::atomic<std::size_t> apart_from{kLargeBlockBytes};

std::size_t round_up(std::size_t n, std::size_t unit) { return (n + unit - 1) / unit * unit; }

class LargeBlockAllocator final : public c10::Allocator {
 public:
  explicit LargeBlockAllocator(c10::Allocator* small) : small_(small), small_delete_(small->raw_deleter()) {}

  c10::DataPtr allocate(std::size_t n) SKEIN_ALLOCATE_CONST override {
    void* p = nullptr;
    if (n >= kLargeBlockBytes)
      p = take(round_up(n, kHugePage));
    else if (n >= apart_from.load() && n > 0)
      p = map_apart(round_up(n, kPage));
    else
      return small_->allocate(n);
    return {p, p, &release, c10::Device(c10::DeviceType::CPU)};
  }
  // Frees a block of either kind: raw_allocate's callers hand back bare pointers.
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
#if SKEIN_ALLOCATOR_HAS_COPY_DATA
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#endif

  LargeBlocks blocks() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t apart = 0;
    for (const auto& block : apart_) apart += block.second;
    return {live_bytes_, kept_bytes_, apart};
  }

  static LargeBlockAllocator* instance;

 private:
  // A block of `size` bytes: a kept one of that size, else a new mapping,
  // once the oldest kept blocks are unmapped as far as needed to keep every
  // mapped block within twice the most ever in tensors at once.
  void* take(std::size_t size) const {
    std::lock_guard<std::mutex> lock(mutex_);
    void* p = nullptr;
    auto kept = kept_.find(size);
    if (kept != kept_.end()) {
      p = kept->second.block;
      kept_.erase(kept);
      kept_bytes_ -= size;
    } else {
      const std::size_t limit = 2 * std::max(peak_live_bytes_, live_bytes_ + size);
      while (!kept_.empty() && live_bytes_ + kept_bytes_ + size > limit) unmap_oldest_kept();
      p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      TORCH_CHECK(p != MAP_FAILED, "CPU allocator: not enough memory: you tried to allocate ", size, " bytes");
      madvise(p, size, MADV_HUGEPAGE);  // a hint; refused where huge pages are off
    }
    live_[p] = size;
    live_bytes_ += size;
    peak_live_bytes_ = std::max(peak_live_bytes_, live_bytes_);
    return p;
  }

  // A mapping of its own, unmapped when freed.
  void* map_apart(std::size_t size) const {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    TORCH_CHECK(p != MAP_FAILED, "CPU allocator: not enough memory: you tried to allocate ", size, " bytes");
    std::lock_guard<std::mutex> lock(mutex_);
    apart_[p] = size;
    return p;
  }

  void unmap_oldest_kept() const {
    auto oldest = kept_.begin();
    for (auto it = kept_.begin(); it != kept_.end(); ++it)
      if (it->second.freed < oldest->second.freed) oldest = it;
    munmap(oldest->second.block, oldest->first);
    kept_bytes_ -= oldest->first;
    kept_.erase(oldest);
  }

  static void release(void* p) {
    LargeBlockAllocator& self = *instance;
    {
      std::lock_guard<std::mutex> lock(self.mutex_);
      auto live = self.live_.find(p);
      if (live != self.live_.end()) {
        self.kept_.emplace(live->second, Kept{p, ++self.frees_});
        self.kept_bytes_ += live->second;
        self.live_bytes_ -= live->second;
        self.live_.erase(live);
        return;
      }
      auto apart = self.apart_.find(p);
      if (apart != self.apart_.end()) {
        munmap(p, apart->second);
        self.apart_.erase(apart);
        return;
      }
    }
    if (self.small_delete_)
      self.small_delete_(p);
    else
      c10::free_cpu(p);
  }

  c10::Allocator* small_;
  c10::DeleterFnPtr small_delete_;
  mutable std::mutex mutex_;
  struct Kept {
    void* block;
    std::uint64_t freed;  // when: the count of frees then
  };
  mutable std::unordered_map<void*, std::size_t> live_;  // blocks in tensors, by address
  mutable std::multimap<std::size_t, Kept> kept_;        // freed blocks, by size
  mutable std::unordered_map<void*, std::size_t> apart_; // MappedApart's blocks in tensors
  mutable std::size_t live_bytes_ = 0, kept_bytes_ = 0, peak_live_bytes_ = 0;
  mutable std::uint64_t frees_ = 0;
};

LargeBlockAllocator* LargeBlockAllocator::instance = nullptr;

}  // namespace

void use_large_block_allocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Never destroyed: tensors may outlive every static (their deleters call it).
    LargeBlockAllocator::instance = new LargeBlockAllocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(LargeBlockAllocator::instance, /*priority=*/1);
  });
}

MappedApart::MappedApart(std::size_t min_bytes) { apart_from.store(std::min(min_bytes, kLargeBlockBytes)); }

MappedApart::~MappedApart() { apart_from.store(kLargeBlockBytes); }

LargeBlocks large_blocks() {
  return LargeBlockAllocator::instance ? LargeBlockAllocator::instance->blocks() : LargeBlocks{};
}

}  // namespace skein::core
