#include <cmath>
#include <limits>

#include <boost/test/unit_test.hpp>

#include "engine_fixture.hpp"
#include "skein/training/engine/epoch_summary.hpp"

using skein::History;

namespace {

// An epoch whose batch records are `rows` of (key, value) pairs.
void epoch_of(History& h, const std::vector<std::vector<std::pair<std::string, double>>>& rows) {
  h.new_epoch();
  auto& log = h.batches();
  for (const auto& row : rows) {
    log.new_row();
    for (const auto& [key, value] : row) log.put(log.key(key), value);
  }
  h.commit_batches();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(epoch_summary)

BOOST_AUTO_TEST_CASE(epoch_values_are_means_weighted_by_batch_size_per_phase) {
  History h;
  epoch_of(h, {{{"train_loss", 1.0}, {"train_batch_size", 3}},
               {{"train_loss", 2.0}, {"train_batch_size", 1}},
               {{"valid_loss", 4.0}, {"valid_acc", 0.5}, {"valid_batch_size", 2}}});
  skein::core::summarize_epoch(h, 1.5);
  BOOST_TEST(h.last().at("train_loss").get<double>() == 1.25);  // (3 * 1 + 1 * 2) / 4
  BOOST_TEST(h.last().at("valid_loss").get<double>() == 4.0);
  BOOST_TEST(h.last().at("valid_acc").get<double>() == 0.5);
  BOOST_TEST(h.last().at("dur").get<double>() == 1.5);
  BOOST_TEST(!h.last().contains("train_batch_size"));
  BOOST_TEST(h.last().at("train_loss_best").get<bool>());  // the first epoch is the best so far
}

BOOST_AUTO_TEST_CASE(best_marks_follow_the_direction_of_each_key_and_never_mark_nan) {
  History h;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::pair<double, double>> epochs = {{1.0, 0.5}, {2.0, 0.7}, {0.5, 0.6}, {nan, 0.9}};
  std::vector<bool> loss_best, acc_best;
  for (const auto& [loss, acc] : epochs) {
    epoch_of(h, {{{"valid_loss", loss}, {"valid_acc", acc}, {"valid_batch_size", 1}}});
    skein::core::summarize_epoch(h, 0);
    loss_best.push_back(h.last().at("valid_loss_best").get<bool>());
    acc_best.push_back(h.last().at("valid_acc_best").get<bool>());
  }
  BOOST_TEST(loss_best == (std::vector<bool>{true, false, true, false}));  // lower is better
  BOOST_TEST(acc_best == (std::vector<bool>{true, true, false, true}));   // higher is better
}

BOOST_AUTO_TEST_CASE(epoch_scores_get_best_marks_once) {
  History h;
  for (double score : {0.3, 0.2}) {
    epoch_of(h, {{{"train_loss", 1.0}, {"train_batch_size", 1}}});
    skein::core::summarize_epoch(h, 0);
    h.record("valid_f1", score);  // as an EpochScorer records it
    skein::core::mark_best_of_epoch_scores(h);
  }
  BOOST_TEST(h.get(0, "valid_f1_best").get<bool>());
  BOOST_TEST(!h.get(1, "valid_f1_best").get<bool>());
  BOOST_TEST(!h.last().contains("train_loss_best_best"));
}

BOOST_AUTO_TEST_SUITE_END()
