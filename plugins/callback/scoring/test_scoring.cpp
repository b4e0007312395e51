#define BOOST_TEST_MODULE scoring
#include <boost/test/unit_test.hpp>

#include <thread>

#include "skein/testing.hpp"
#include "skein/io/input_file.hpp"

// The scoring callback's epoch scores against scikit-learn's on the same
// predictions (sklearn_scores.json), fed in uneven
// batches to one rank, and to two ranks (threads) that merge their counts.
using skein::testing::FakeRun;

namespace {

torch::Tensor tensor_of(const nlohmann::json& rows, torch::Dtype dtype) {
  std::vector<double> flat;
  std::int64_t width = 0;
  for (const auto& row : rows) {
    if (row.is_array()) {
      width = static_cast<std::int64_t>(row.size());
      for (const auto& v : row) flat.push_back(v.get<double>());
    } else {
      flat.push_back(row.get<double>());
    }
  }
  auto t = torch::tensor(flat, torch::kFloat64);
  if (width) t = t.reshape({-1, width});
  return t.to(dtype);
}

}  // namespace

struct ScoringFixture : skein::testing::CallbackFixture {
  // scikit-learn's scores of the same predictions, in sklearn_scores.json
  // beside this file (tests/python/interop.py sklearn_scores wrote it;
  // test_interop checks that it still does).
  ScoringFixture()
      : expected(nlohmann::json::parse(
            skein::read_whole_file(PLUGIN_TEST_DIR "/sklearn_scores.json")
                .value())) {}

  // The epoch record after `options`' scoring saw these valid batches,
  // split over `world` ranks (rank r takes every world-th batch of sizes
  // 7, 30, 1, 40, ... cycling).
  // `restart_at`: after that many batches of its own, each rank's callback
  // is replaced by a new one given the old one's state (a step checkpoint).
  std::vector<nlohmann::json> scored(const nlohmann::json& options, const torch::Tensor& outputs,
                                     const torch::Tensor& targets, int world, int restart_at = -1) {
    std::vector<std::pair<std::int64_t, std::int64_t>> spans;
    const std::int64_t sizes[] = {7, 30, 1, 40};
    for (std::int64_t at = 0, i = 0; at < outputs.size(0); at += sizes[i++ % 4])
      spans.push_back({at, std::min(outputs.size(0), at + sizes[i % 4])});
    skein::testing::ThreadRanks ranks(world);
    std::vector<nlohmann::json> records(world);
    std::vector<std::exception_ptr> errors(world);
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r)
      threads.emplace_back([&, r] {
        try {
          records[r] = score_rank(options, outputs, targets, spans, ranks, r, world, restart_at);
        } catch (...) {
          errors[r] = std::current_exception();
        }
      });
    for (auto& t : threads) t.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
    return records;
  }

  // One rank's epoch: its share of the batches, then the merged scores.
  nlohmann::json score_rank(const nlohmann::json& options, const torch::Tensor& outputs, const torch::Tensor& targets,
                            const std::vector<std::pair<std::int64_t, std::int64_t>>& spans,
                            skein::testing::ThreadRanks& ranks, int rank, int world, int restart_at) {
    // This rank's own harness: the rank its callbacks are made with is the one they run as.
    skein::testing::Harness rank_harness;
    rank_harness.run().rank = rank;
    rank_harness.run().world_size = world;
    skein::testing::FakeRunOptions run;
    run.ranks = &ranks;
    FakeRun ctx(rank_harness, run);
    const auto make = [&](const std::string& name, const nlohmann::json& o) {
      return rank_harness.create<skein::Callback>(name, o);
    };
    auto cb = make("scoring", options);
    cb->on_train_begin(ctx);
    cb->on_epoch_begin(ctx);
    int done = 0;
    for (std::size_t i = static_cast<std::size_t>(rank); i < spans.size(); i += static_cast<std::size_t>(world)) {
      if (done++ == restart_at) {
        const std::string state = cb->state().dump();
        cb = make("scoring", options);
        cb->on_train_begin(ctx);
        cb->load_state(nlohmann::json::parse(state));
      }
      const auto out = outputs.slice(0, spans[i].first, spans[i].second);
      const auto t = targets.slice(0, spans[i].first, spans[i].second);
      skein::Batch b{out, t};
      b.outputs = out;
      b.training = false;
      cb->on_batch_end(ctx, b);
    }
    ctx.epoch_with("valid_loss", 1);
    dynamic_cast<skein::EpochScorer&>(*cb).on_epoch_scored(ctx);
    return ctx.history().last();
  }

  void same(const nlohmann::json& record, const std::string& key, double want) {
    BOOST_TEST_REQUIRE(record.contains(key), key << " missing in " << record.dump());
    BOOST_TEST(record[key].get<double>() == want, boost::test_tools::tolerance(1e-9) << key);
  }

  nlohmann::json expected;
};

BOOST_FIXTURE_TEST_SUITE(scoring, ScoringFixture)

// A step checkpoint inside an epoch keeps each rank's sums: scores of an
// epoch resumed half-way are those of the epoch run through.
BOOST_AUTO_TEST_CASE(epoch_sums_survive_a_checkpoint_inside_the_epoch) {
  const auto outputs = tensor_of(expected["scores"], torch::kFloat32);
  const auto labels = tensor_of(expected["labels"], torch::kInt64);
  const nlohmann::json classes = {{"scores", {"valid_f1", "valid_precision"}}, {"per_class", true}};
  const auto binary_out = outputs.select(1, 1) - outputs.select(1, 0);
  const auto binary_labels = labels.gt(1).to(torch::kFloat32);
  for (const int world : {1, 2}) {
    BOOST_TEST(scored(classes, outputs, labels, world, 2) == scored(classes, outputs, labels, world));
    BOOST_TEST(scored({{"scores", {"valid_roc_auc"}}}, binary_out, binary_labels, world, 3) ==
               scored({{"scores", {"valid_roc_auc"}}}, binary_out, binary_labels, world));
    BOOST_TEST(scored({{"scores", {"valid_rmse", "valid_r2"}}}, outputs, outputs * 0.5, world, 1) ==
               scored({{"scores", {"valid_rmse", "valid_r2"}}}, outputs, outputs * 0.5, world));
  }
  // At an epoch's end the state is empty sums: a checkpoint carries no scores.
  FakeRun ctx(harness);
  auto cb = make("scoring", {{"scores", {"train_roc_auc"}}});
  BOOST_TEST(cb->state()["train"]["auc_scores"].empty());
}

BOOST_AUTO_TEST_CASE(classification_scores_match_scikit_learn) {
  const auto outputs = tensor_of(expected["scores"], torch::kFloat32);
  const auto labels = tensor_of(expected["labels"], torch::kInt64);
  const nlohmann::json options = {{"scores", {"valid_precision", "valid_recall", "valid_f1"}}, {"per_class", true}};
  for (const int world : {1, 2}) {
    for (const auto& record : scored(options, outputs, labels, world)) {
      same(record, "valid_precision", expected["precision"]);
      same(record, "valid_recall", expected["recall"]);
      same(record, "valid_f1", expected["f1"]);
      for (int c = 0; c < 4; ++c) {
        same(record, "valid_precision_" + std::to_string(c), expected["precision_per_class"][c]);
        same(record, "valid_recall_" + std::to_string(c), expected["recall_per_class"][c]);
        same(record, "valid_f1_" + std::to_string(c), expected["f1_per_class"][c]);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(binary_scores_and_roc_auc_match_scikit_learn) {
  const auto logits = tensor_of(expected["logits"], torch::kFloat32).unsqueeze(1);
  const auto labels = tensor_of(expected["binary"], torch::kFloat32).unsqueeze(1);
  for (const int world : {1, 2})
    for (const auto& record : scored({{"scores", {"valid_roc_auc", "valid_f1"}}}, logits, labels, world)) {
      same(record, "valid_roc_auc", expected["roc_auc"]);
      same(record, "valid_f1", expected["binary_f1"]);
    }
  // Two class scores: the second minus the first is the score.
  const auto two = torch::cat({torch::zeros_like(logits), logits}, 1);
  const auto ids = labels.squeeze(1).to(torch::kInt64);
  same(scored({{"scores", {"valid_roc_auc"}}}, two, ids, 1)[0], "valid_roc_auc", expected["roc_auc"]);
  const auto four = torch::zeros({8, 4});
  const auto err = skein::testing::message_of<skein::ConfigError>(
      [&] { scored({{"scores", {"valid_roc_auc"}}}, four, torch::zeros({8}, torch::kInt64), 1); });
  BOOST_TEST(skein::testing::contains(err, "roc_auc is for binary classification"), err);
  BOOST_TEST(skein::testing::contains(err, "the model outputs [7, 4]"), err);
  // Found at the first (training) batch, not first at validation.
  FakeRun ctx(harness);
  auto cb = make("scoring", {{"scores", {"valid_roc_auc"}}});
  cb->on_train_begin(ctx);
  skein::Batch train_batch{four, torch::zeros({8}, torch::kInt64)};
  train_batch.outputs = four;
  BOOST_CHECK_THROW(cb->on_batch_end(ctx, train_batch), skein::ConfigError);
}

BOOST_AUTO_TEST_CASE(regression_scores_match_scikit_learn) {
  const auto guess = tensor_of(expected["guess"], torch::kFloat64);
  const auto truth = tensor_of(expected["truth"], torch::kFloat64);
  for (const int world : {1, 2})
    for (const auto& record : scored({{"scores", {"valid_rmse", "valid_mae", "valid_r2"}}}, guess, truth, world)) {
      same(record, "valid_rmse", expected["rmse"]);
      same(record, "valid_mae", expected["mae"]);
      same(record, "valid_r2", expected["r2"]);
    }
}

BOOST_AUTO_TEST_CASE(unknown_scores_are_config_errors) {
  const auto err = skein::testing::message_of<skein::ConfigError>([&] { make("scoring", {{"scores", {"valid_auc"}}}); });
  BOOST_TEST(skein::testing::contains(err, "'valid_auc' is not <phase>_ followed by acc"), err);
}

BOOST_AUTO_TEST_SUITE_END()
