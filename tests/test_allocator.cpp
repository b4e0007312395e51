#define BOOST_TEST_MODULE allocator
#include <boost/test/unit_test.hpp>

#include <malloc.h>

#include <cstdint>
#include <cstdlib>

#include <torch/torch.h>

#include "skein/training/device/malloc_tuning.hpp"
#include "skein/training/device/large_blocks.hpp"
#include "test_support.hpp"

// glibc's malloc tuned for training (core/training/device/src/malloc_tuning.cpp): large blocks
// stay in the heap instead of being mapped and unmapped every step. Under
// AddressSanitizer malloc is the sanitizer's, and Skein must leave it alone.

namespace {

constexpr bool kSanitizerMalloc = test::kAddressSanitizer;

const std::string kSkein = SKEIN_EXE;

struct Fixture : test::Workspace {
  // A one-epoch run with `env` before the command; returns its results.json.
  test::CommandResult train(const std::string& env, std::string& run_dir) {
    auto cfg = test::synthetic_config();
    cfg["max_epochs"] = 1;
    run_dir = dir("run" + std::to_string(runs));
    return test::run("env " + env + " " + kSkein + " train --config " + write_config(cfg) + " --run-dir " + run_dir);
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(allocator, Fixture)

BOOST_AUTO_TEST_CASE(a_freed_large_block_stays_in_the_heap_once_tuned) {
  if (std::getenv("SKEIN_MALLOC") || std::getenv("MALLOC_MMAP_THRESHOLD_")) {
    BOOST_TEST_MESSAGE("skipped: the environment sets the allocator");
    return;
  }
  const auto& tuning = skein::core::tune_allocator_for_training();
  BOOST_TEST(&tuning == &skein::core::tune_allocator_for_training());  // decided once
  if (kSanitizerMalloc) {
    BOOST_TEST(!tuning.tuned);
    BOOST_TEST(test::contains(tuning.summary, "left as it is"), tuning.summary);
    return;
  }
  BOOST_REQUIRE_MESSAGE(tuning.tuned, tuning.summary);
  // 8 MiB: above glibc's default mmap threshold (128 KiB, and its dynamic
  // ceiling of 32 MiB is not reached in this fresh process), so untuned it
  // would be a mapping of its own (counted in hblkhd).
  const auto mapped_before = mallinfo2().hblkhd;
  void* block = std::malloc(8u << 20);
  BOOST_REQUIRE(block);
  static_cast<volatile char*>(block)[0] = 1;
  BOOST_TEST(mallinfo2().hblkhd == mapped_before, "an 8 MiB block was mapped with mmap");
  std::free(block);
}

// Tensors of 32 MiB or more are mappings of their own, kept when freed and
// taken again by the next tensor of their size; one that nothing kept fits
// gives back the oldest kept ones as far as needed to keep all mapped within
// twice the most ever in tensors at once. Smaller tensors are malloc's.
BOOST_AUTO_TEST_CASE(large_tensors_reuse_their_blocks_once_tuned) {
  if (std::getenv("SKEIN_MALLOC") || std::getenv("MALLOC_MMAP_THRESHOLD_") || kSanitizerMalloc) {
    BOOST_TEST_MESSAGE("skipped: the allocator is not tuned here");
    return;
  }
  BOOST_REQUIRE(skein::core::tune_allocator_for_training().tuned);
  constexpr long kMiB = 1 << 20;
  constexpr std::size_t kBytesPerMiB = kMiB;
  auto floats = [&](long mib) { return torch::ones({mib * kMiB / 4}); };
  BOOST_REQUIRE(skein::core::large_blocks().live_bytes == 0u);  // nothing large yet in this process
  const void* first = nullptr;
  {
    const auto a = floats(40);
    first = a.data_ptr();
    BOOST_TEST(skein::core::large_blocks().live_bytes == 40 * kBytesPerMiB);
    const auto small = torch::ones({1000});
    BOOST_TEST(skein::core::large_blocks().live_bytes == 40 * kBytesPerMiB);
  }
  BOOST_TEST(skein::core::large_blocks().kept_bytes == 40 * kBytesPerMiB);
  {
    const auto b = torch::zeros({40 * kMiB / 4});
    BOOST_TEST(b.data_ptr() == first);  // the kept block, taken again
    BOOST_TEST(b.sum().item<double>() == 0.0);
    BOOST_TEST(skein::core::large_blocks().kept_bytes == 0u);
  }
  { const auto c = floats(36); }  // 40 + 36 mapped: within twice the 40 held at once
  BOOST_TEST(skein::core::large_blocks().kept_bytes == 76 * kBytesPerMiB);
  const auto d = floats(44);  // 40 + 36 + 44 > 2 x 44: the oldest kept (40) goes back
  BOOST_TEST(skein::core::large_blocks().kept_bytes == 36 * kBytesPerMiB);
  BOOST_TEST(d.sum().item<double>() == 11.0 * kMiB);

  // While a MappedApart lives, smaller tensors from its size are mappings of
  // their own too, unmapped when freed (never kept); malloc's again after it.
  {
    const skein::core::MappedApart apart(kMiB);
    const auto e = floats(2);
    BOOST_TEST(skein::core::large_blocks().apart_bytes == 2 * kBytesPerMiB);
    BOOST_TEST(reinterpret_cast<std::uintptr_t>(e.data_ptr()) % 4096 == 0u);
    const auto below = torch::ones({1000});
    BOOST_TEST(skein::core::large_blocks().apart_bytes == 2 * kBytesPerMiB);
  }
  BOOST_TEST(skein::core::large_blocks().apart_bytes == 0u);
  BOOST_TEST(skein::core::large_blocks().kept_bytes == 36 * kBytesPerMiB);
  const auto f = floats(2);
  BOOST_TEST(skein::core::large_blocks().apart_bytes == 0u);
}

BOOST_AUTO_TEST_CASE(skein_train_tunes_by_default_and_says_so) {
  std::string run;
  auto r = train("", run);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto results = test::load_json(run + "/results.json");
  const std::string log = test::read_text(run + "/train.log");
  BOOST_TEST(results["malloc_tuned"].get<bool>() == !kSanitizerMalloc);
  BOOST_TEST(test::contains(log, kSanitizerMalloc ? "left as it is" : "malloc: glibc, tuned for training"), log);
}

BOOST_AUTO_TEST_CASE(the_tuning_is_off_with_skein_malloc_system_or_glibc_variables_set) {
  for (const std::string env : {"SKEIN_MALLOC=system", "MALLOC_TRIM_THRESHOLD_=1000000",
                                "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=65536"}) {
    std::string run;
    auto r = train(env, run);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, env << ": " << r.err);
    BOOST_TEST(!test::load_json(run + "/results.json")["malloc_tuned"].get<bool>(), env);
    const std::string log = test::read_text(run + "/train.log");
    if (!kSanitizerMalloc)
      BOOST_TEST(test::contains(log, env == "SKEIN_MALLOC=system" ? "glibc defaults (SKEIN_MALLOC=system)"
                                                                 : "as set by the environment"),
                 env << ": " << log);
  }
}

BOOST_AUTO_TEST_CASE(an_unknown_skein_malloc_is_one_clear_error) {
  std::string run;
  auto r = train("SKEIN_MALLOC=fast", run);
  BOOST_TEST(r.exit_code == 2, r.err);
  BOOST_TEST(test::one_error_line(r), r.err);
  BOOST_TEST(test::contains(r.err, "SKEIN_MALLOC='fast': must be tuned (the default) or system"), r.err);
}

BOOST_AUTO_TEST_SUITE_END()
