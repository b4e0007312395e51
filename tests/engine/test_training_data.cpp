#include <algorithm>
#include <numeric>
#include <set>

#include <boost/test/unit_test.hpp>

#include "engine_fixture.hpp"
#include "skein/training/config/config.hpp"
#include "skein/errors.hpp"
#include "skein/training/data/training_data.hpp"
#include "rank_of.hpp"

using skein::core::eval_pass_batches;
using skein::core::train_pass_batches;
using skein::testing::message_of;
using test::rank_of;

namespace {

std::vector<std::int64_t> flat(const std::vector<std::vector<std::int64_t>>& batches) {
  std::vector<std::int64_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  return all;
}

// A dataset held in memory: `n` samples of 4 features, labels 0..2.
struct MemoryData : skein::Dataset {
  explicit MemoryData(std::int64_t n, std::int64_t targets = -1) : n_(n), targets_(targets < 0 ? n : targets) {}
  skein::DataInfo info() const override { return {{4}, 3}; }
  skein::TensorSplit train() override {
    return {torch::randn({n_, 4}), torch::arange(targets_, torch::kLong).remainder(3)};
  }
  std::int64_t n_, targets_;
};

struct DataFixture {
  skein::testing::Harness harness;
  std::shared_ptr<skein::Loss> loss = harness.create<skein::Loss>("cross_entropy");
  skein::core::PluginUse use;
  skein::core::PluginRecord record;
  skein::DataInfo info{{4}, 3};
  DataFixture() {
    record.name = "memory";
    use.record = &record;
    use.path = "data";
  }
  skein::core::TrainingData open(skein::Dataset& data, const skein::core::RunConfig& config, int world = 1) {
    return skein::core::open_training_data({data, use, info, *loss}, config, rank_of(0, world));
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(training_data, DataFixture)

BOOST_AUTO_TEST_CASE(a_training_pass_gives_every_rank_as_many_batches_and_repeats_per_epoch) {
  const auto r0 = train_pass_batches(10, rank_of(0, 2), 2, 7, 1);
  const auto r1 = train_pass_batches(10, rank_of(1, 2), 2, 7, 1);
  BOOST_TEST(r0.size() == 3u);  // 5 samples each: batches of 2, 2, 1
  BOOST_TEST(r1.size() == 3u);
  std::set<std::int64_t> seen;
  for (auto i : flat(r0)) seen.insert(i);
  for (auto i : flat(r1)) seen.insert(i);
  BOOST_TEST(seen.size() == 10u);  // together, every sample once
  BOOST_TEST(flat(train_pass_batches(10, rank_of(0, 2), 2, 7, 1)) == flat(r0));  // a resumed epoch draws the same
  BOOST_TEST(flat(train_pass_batches(10, rank_of(0, 2), 2, 7, 2)) != flat(r0));  // the next epoch another
  BOOST_TEST(skein::core::train_batches_per_epoch(10, 2, 2) == 3);
  BOOST_TEST(skein::core::train_batches_per_epoch(11, 2, 2) == 3);  // ceil(11 / 2) = 6 samples a rank
}

// Elastic resume inside an epoch: what the old ranks had not trained is
// re-sharded over the new ones, each sample once (padding aside), every new
// rank with as many batches; on the same world size it is the old batching.
BOOST_AUTO_TEST_CASE(the_rest_of_an_epoch_is_resharded_by_global_sample_index) {
  const std::int64_t n = 50, bs = 4;  // 25 rows a rank on 2: 7 batches, 3 done
  const std::vector<skein::core::PassSegment> began{{2, 3}};
  std::vector<std::int64_t> seen;
  for (int r = 0; r < 2; ++r) {
    const auto old = train_pass_batches(n, rank_of(r, 2), bs, 9, 4);
    for (int b = 0; b < 3; ++b) seen.insert(seen.end(), old[b].begin(), old[b].end());
    BOOST_TEST((skein::core::pass_segment_batches(n, rank_of(r, 2), bs, 9, 4, began) ==
                std::vector<std::vector<std::int64_t>>(old.begin() + 3, old.end())));
  }
  for (int world : {1, 3, 4}) {
    std::vector<std::int64_t> all = seen;
    std::size_t batches = 0;
    for (int r = 0; r < world; ++r) {
      const auto mine = skein::core::pass_segment_batches(n, rank_of(r, world), bs, 9, 4, began);
      if (r == 0) batches = mine.size();
      BOOST_TEST(mine.size() == batches, world);
      for (const auto& b : mine) BOOST_TEST(b.size() <= static_cast<std::size_t>(bs));
      const auto rows = flat(mine);
      all.insert(all.end(), rows.begin(), rows.end());
    }
    // 26 rows left: 26, 27 (9 each) and 28 (7 each) rows, the extra ones repeated.
    const std::size_t padding = (world - 26 % world) % world;
    BOOST_TEST(all.size() == 50 + padding, world);
    std::set<std::int64_t> distinct(all.begin(), all.end());
    BOOST_TEST(distinct.size() == 50u, world);
    BOOST_TEST(*distinct.begin() == 0);
    BOOST_TEST(*distinct.rbegin() == 49);
  }
  // An epoch whose every batch was trained leaves nothing.
  BOOST_TEST(skein::core::pass_segment_batches(n, rank_of(0, 3), bs, 9, 4, {{2, 7}}).empty());
  // A segment cannot have done more batches than it had, nor run on more ranks than samples.
  BOOST_CHECK_THROW(skein::core::pass_rows_left(n, bs, 9, 4, {{2, 8}}), std::invalid_argument);
  BOOST_CHECK_THROW(skein::core::pass_rows_left(n, bs, 9, 4, {{2, 3}, {1, 8}}), std::invalid_argument);
  BOOST_CHECK_THROW(skein::core::pass_rows_left(n, bs, 9, 4, {{51, 0}}), std::invalid_argument);
}

// Chains of resumes inside one epoch (2 -> 1 -> 2, 1 -> 4 -> 2, ...), each
// stopped after some batches: every sample is trained exactly once, bar the
// repeats that pad a segment whose rows do not divide among its ranks.
BOOST_AUTO_TEST_CASE(any_chain_of_resumes_trains_every_sample_once) {
  const std::int64_t n = 240, bs = 8;
  // {world size, batches each rank trains before the next resume}; the last trains to the end.
  const std::vector<std::vector<skein::core::PassSegment>> chains = {
      {{2, 9}, {1, 4}, {2, 0}},  {{2, 9}, {1, 4}, {1, 0}}, {{1, 20}, {2, 3}, {1, 0}},
      {{3, 6}, {2, 2}, {3, 0}},  {{2, 3}, {3, 4}, {2, 0}}, {{1, 12}, {4, 3}, {2, 0}},
      {{4, 2}, {1, 7}, {3, 1}, {2, 0}}, {{3, 1}, {3, 2}, {2, 5}, {4, 1}, {1, 0}}, {{2, 15}, {1, 0}}};
  for (const auto& chain : chains) {
    std::vector<int> trained(n, 0);
    std::int64_t padding = 0;
    std::vector<skein::core::PassSegment> done;
    for (std::size_t s = 0; s < chain.size(); ++s) {
      const int world = chain[s].world_size;
      const bool last = s + 1 == chain.size();
      const std::int64_t rows = done.empty() ? n : static_cast<std::int64_t>(
          skein::core::pass_rows_left(n, bs, 9, 2, done).size());
      padding += (world - rows % world) % world;
      std::size_t batches = 0;
      for (int r = 0; r < world; ++r) {
        const auto mine = skein::core::pass_segment_batches(n, rank_of(r, world), bs, 9, 2, done);
        if (r == 0) batches = mine.size();
        BOOST_TEST(mine.size() == batches);  // every rank as many steps
        const std::size_t upto = last ? mine.size() : static_cast<std::size_t>(chain[s].batches_done);
        BOOST_REQUIRE(upto <= mine.size());
        for (std::size_t b = 0; b < upto; ++b)
          for (auto row : mine[b]) ++trained[static_cast<std::size_t>(row)];
      }
      done.push_back(chain[s]);
    }
    std::int64_t total = 0, missing = 0;
    for (int c : trained) {
      total += c;
      missing += c == 0;
    }
    BOOST_TEST(missing == 0);
    BOOST_TEST(total >= n);
    BOOST_TEST(total - n <= padding);
  }
}

BOOST_AUTO_TEST_CASE(an_evaluation_pass_covers_every_sample_exactly_once_in_order) {
  std::vector<std::int64_t> all;
  for (int rank = 0; rank < 3; ++rank) {
    const auto mine = flat(eval_pass_batches(10, rank_of(rank, 3), 2));
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::vector<std::int64_t> expected(10);
  std::iota(expected.begin(), expected.end(), 0);
  BOOST_TEST(all == expected);
}

BOOST_AUTO_TEST_CASE(valid_split_holds_out_a_fraction_of_the_training_rows) {
  MemoryData data(40);
  skein::core::RunConfig config;
  config.valid_split = 0.25;
  const auto d = open(data, config);
  BOOST_TEST(d.train.size() == 30);
  BOOST_TEST(d.valid.size() == 10);
  BOOST_TEST(!d.test.has_value());
  BOOST_TEST(d.pool.get() == nullptr);  // all in memory: nothing to fetch ahead
  BOOST_TEST(!d.scaling.active());
  config.standardize = true;
  BOOST_TEST(open(data, config).scaling.active());
}

BOOST_AUTO_TEST_CASE(too_few_samples_for_the_ranks_and_mismatched_splits_are_refused) {
  MemoryData small(4);
  skein::core::RunConfig config;
  config.valid_split = 0.5;
  BOOST_TEST(message_of<skein::ConfigError>([&] { open(small, config, 3); }) ==
             "data: 2 training samples cannot feed 3 ranks");
  MemoryData uneven(10, 9);
  BOOST_TEST(message_of([&] { open(uneven, config); }) == "dataset: train split has 10 inputs but 9 targets");
}

BOOST_AUTO_TEST_SUITE_END()
