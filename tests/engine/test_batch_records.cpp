#include <boost/test/unit_test.hpp>

#include "engine_fixture.hpp"
#include "skein/training/engine/batch_records.hpp"

using engine_test::logged;

BOOST_FIXTURE_TEST_SUITE(batch_records, engine_test::Engine)

BOOST_AUTO_TEST_CASE(records_train_and_valid_values_under_their_keys) {
  history.new_epoch();
  auto& log = history.batches();
  log.new_row();
  records.train(torch::tensor(0.5), 8);
  log.new_row();
  const torch::Tensor correct = torch::tensor(3, torch::kLong);
  records.valid(torch::tensor(0.25), &correct, 4);
  log.new_row();
  records.valid(torch::tensor(0.125), nullptr, 2);  // not a classification loss: no valid_acc
  BOOST_TEST(logged(log, "train_loss") == (std::vector<double>{0.5}));
  BOOST_TEST(logged(log, "train_batch_size") == (std::vector<double>{8}));
  BOOST_TEST(logged(log, "valid_loss") == (std::vector<double>{0.25, 0.125}));
  BOOST_TEST(logged(log, "valid_acc") == (std::vector<double>{0.75}));
}

BOOST_AUTO_TEST_CASE(the_losss_own_values_get_the_phase_as_prefix) {
  struct WithMetric : skein::Loss {
    torch::Tensor compute(const torch::Tensor& o, const torch::Tensor&) override { return o.sum(); }
    std::vector<skein::LossMetric> metrics(const torch::Tensor&, const torch::Tensor&) const override {
      return {{"mae", 2.0}};
    }
  } loss;
  history.new_epoch();
  auto b = batch(2);
  b.outputs = torch::zeros({2, 3});
  history.batches().new_row();
  records.loss_metrics(loss, b, "train");
  records.loss_metrics(loss, b, "valid");
  BOOST_TEST(logged(history.batches(), "train_mae") == (std::vector<double>{2.0}));
  BOOST_TEST(logged(history.batches(), "valid_mae") == (std::vector<double>{2.0}));
}

BOOST_AUTO_TEST_CASE(keys_are_interned_again_for_a_replaced_history) {
  history = skein::History::from_json(nlohmann::json::array());
  records.intern();
  history.new_epoch();
  history.batches().new_row();
  records.train(torch::tensor(1.0), 2);
  BOOST_TEST(logged(history.batches(), "train_loss") == (std::vector<double>{1.0}));
}

// On CUDA the train losses stay on the device until flush(): then each lands
// in its own row, after what callbacks put in that row meanwhile (here on
// CPU tensors, the same code path).
BOOST_AUTO_TEST_CASE(deferred_train_losses_land_in_their_rows_on_flush) {
  skein::core::BatchRecords deferred(history, /*defer=*/true);
  history.new_epoch();
  auto& log = history.batches();
  const int norm = log.key("train_grad_norm");
  for (int i = 0; i < 3; ++i) {
    log.new_row();
    deferred.train(torch::tensor(0.5 * (i + 1)), 4);
    log.put(norm, 10.0 + i);  // a callback's value of the same batch
  }
  BOOST_TEST(logged(log, "train_loss").empty());  // nothing read from the device yet
  BOOST_TEST(logged(log, "train_batch_size") == (std::vector<double>{4, 4, 4}));
  deferred.flush();
  BOOST_TEST(logged(log, "train_loss") == (std::vector<double>{0.5, 1.0, 1.5}));
  std::uint32_t last_row = 0;
  for (const auto& cell : log.cells()) {  // still in row order
    BOOST_TEST(cell.row >= last_row);
    last_row = cell.row;
  }
  BOOST_TEST(log.cells().back().row == 2u);
  BOOST_TEST(log.keys()[log.cells().back().key] == "train_loss");
  deferred.flush();  // nothing pending: nothing added
  BOOST_TEST(logged(log, "train_loss").size() == 3u);
}

// Validation too: its losses and accuracies wait on the device for flush().
BOOST_AUTO_TEST_CASE(deferred_valid_losses_and_accuracies_land_in_their_rows_on_flush) {
  skein::core::BatchRecords deferred(history, /*defer=*/true);
  history.new_epoch();
  auto& log = history.batches();
  log.new_row();
  const torch::Tensor correct = torch::tensor(1, torch::kLong);
  deferred.valid(torch::tensor(0.5), &correct, 4);
  log.new_row();
  deferred.valid(torch::tensor(0.25), nullptr, 2);
  BOOST_TEST(logged(log, "valid_loss").empty());
  BOOST_TEST(logged(log, "valid_batch_size") == (std::vector<double>{4, 2}));
  deferred.flush();
  BOOST_TEST(logged(log, "valid_loss") == (std::vector<double>{0.5, 0.25}));
  BOOST_TEST(logged(log, "valid_acc") == (std::vector<double>{0.25}));
}

BOOST_AUTO_TEST_SUITE_END()
