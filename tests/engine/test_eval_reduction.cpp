#include <thread>

#include <boost/test/unit_test.hpp>

#include "engine_fixture.hpp"
#include "skein/training/engine/eval_reduction.hpp"

using skein::core::EvalResult;
using skein::core::EvalSums;

namespace {

// Each rank's sums reduced on its own thread; rank 0's result.
EvalResult reduce_on_ranks(std::vector<EvalSums> by_rank, bool classification) {
  skein::testing::ThreadRanks ranks(static_cast<int>(by_rank.size()));
  std::vector<EvalResult> results(by_rank.size());
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < by_rank.size(); ++r)
    threads.emplace_back([&, r] {
      skein::testing::FakeParallel parallel(&ranks);
      results[r] = skein::core::reduce_eval(by_rank[r], parallel, classification);
    });
  for (auto& t : threads) t.join();
  for (const auto& r : results) BOOST_TEST(r.loss == results[0].loss);  // every rank gets the same
  return results[0];
}

EvalSums sums_of(double loss_sum, double correct, double samples, long batches) {
  EvalSums s;
  s.values = {loss_sum, correct, samples};
  s.batches = batches;
  return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(eval_reduction)

BOOST_AUTO_TEST_CASE(loss_and_accuracy_are_means_over_every_ranks_samples) {
  const auto r = reduce_on_ranks({sums_of(6.0, 3, 4, 1), sums_of(2.0, 1, 4, 1)}, true);
  BOOST_TEST(r.samples == 8);
  BOOST_TEST(r.loss == 1.0);
  BOOST_TEST(r.accuracy.value() == 0.5);
  const auto regression = reduce_on_ranks({sums_of(6.0, 0, 4, 1)}, false);
  BOOST_TEST(!regression.accuracy);
}

BOOST_AUTO_TEST_CASE(the_losss_values_count_only_when_every_rank_has_them) {
  auto a = sums_of(1, 0, 2, 1), b = sums_of(1, 0, 2, 1);
  a.metrics["mae"] = 2.0;
  b.metrics["mae"] = 6.0;
  BOOST_TEST(reduce_on_ranks({a, b}, false).metrics.at("mae") == 2.0);  // (2 + 6) / 4 samples
  auto idle = sums_of(0, 0, 0, 0);  // a rank without a batch has no names to match
  idle.metrics.clear();
  BOOST_TEST(reduce_on_ranks({a, idle}, false).metrics.empty());
}

BOOST_AUTO_TEST_CASE(confusion_matrices_of_the_test_split_are_summed_over_ranks) {
  auto a = sums_of(1, 1, 2, 1), b = sums_of(1, 0, 1, 1);
  a.unrecorded = b.unrecorded = true;
  a.confusion = torch::tensor({1, 1, 0, 0}, torch::kLong).reshape({2, 2});
  b.confusion = torch::tensor({0, 0, 1, 0}, torch::kLong).reshape({2, 2});
  const auto r = reduce_on_ranks({a, b}, true);
  BOOST_TEST(r.confusion == (std::vector<std::vector<std::int64_t>>{{1, 1}, {1, 0}}));
  auto none = sums_of(0, 0, 0, 0);  // a rank that saw no test batch still takes part
  none.unrecorded = true;
  BOOST_TEST(reduce_on_ranks({a, none}, true).confusion == (std::vector<std::vector<std::int64_t>>{{1, 1}, {0, 0}}));
}

// 60,000 classes would make a 28.8 GB matrix after training: above
// kMaxConfusionClasses none is counted or reduced, and the result says how
// many classes there were (results.json notes it). Up to the cap it is kept.
BOOST_AUTO_TEST_CASE(no_confusion_matrix_is_kept_above_its_documented_size) {
  using skein::core::kMaxConfusionClasses;
  // A test batch of 3 samples over `classes` classes, the last one predicted right.
  auto add = [](EvalSums& sums, std::int64_t classes) {
    const torch::Tensor inputs = torch::zeros({3, 1});
    const torch::Tensor targets = torch::tensor({std::int64_t{0}, std::int64_t{2}, classes - 1});
    skein::Batch b{inputs, targets};
    b.outputs = torch::zeros({3, classes});
    b.outputs.index_put_({2, classes - 1}, 1.0);
    skein::core::add_confusion(sums, b);
  };
  auto big = sums_of(3, 1, 3, 1), small = sums_of(1, 0, 1, 1);
  big.unrecorded = small.unrecorded = true;
  add(big, kMaxConfusionClasses + 1);
  BOOST_TEST(!big.confusion.defined());  // never allocated
  BOOST_TEST(big.classes == kMaxConfusionClasses + 1);
  add(small, 3);
  const auto r = reduce_on_ranks({big, small}, true);  // the other rank's matrix is left out too
  BOOST_TEST(r.confusion.empty());
  BOOST_TEST(r.confusion_left_out == kMaxConfusionClasses + 1);

  auto at_cap = sums_of(3, 1, 3, 1);
  at_cap.unrecorded = true;
  add(at_cap, kMaxConfusionClasses);
  const auto kept = reduce_on_ranks({at_cap}, true);
  BOOST_TEST(kept.confusion_left_out == 0);
  BOOST_TEST_REQUIRE(kept.confusion.size() == static_cast<std::size_t>(kMaxConfusionClasses));
  BOOST_TEST(kept.confusion.back().back() == 1);
}

BOOST_AUTO_TEST_SUITE_END()
