#include <boost/test/unit_test.hpp>

#include "engine_fixture.hpp"
#include "skein/training/engine/evaluation.hpp"

using engine_test::logged;

BOOST_FIXTURE_TEST_SUITE(evaluation, engine_test::Engine)

BOOST_AUTO_TEST_CASE(a_validation_batch_is_recorded_with_its_hooks_and_no_gradient) {
  skein::core::EvalStep step(step_parts());
  history.new_epoch();
  parts.model->train();
  skein::core::EvalSums sums;
  auto b = batch(5);
  step.run(b, true, sums);
  BOOST_TEST(!parts.model->is_training());
  BOOST_TEST(!b.loss.requires_grad());
  BOOST_TEST(!b.training);
  BOOST_TEST(callback->seen == (std::vector<std::string>{"batch_begin", "batch_end"}));
  const double correct = b.outputs.argmax(1).eq(b.targets).sum().item<double>();
  BOOST_TEST(logged(history.batches(), "valid_acc") == (std::vector<double>{correct / 5}));
  BOOST_TEST(logged(history.batches(), "valid_batch_size") == (std::vector<double>{5}));
  BOOST_TEST(sums.values[2] == 5);  // samples counted on the host; loss and hits wait on the device
  BOOST_TEST(sums.on_device.defined());
  sums.settle();
  BOOST_TEST(!sums.on_device.defined());
  BOOST_TEST(sums.values == (std::vector<double>{b.loss.item<double>() * 5, correct, 5}));
  BOOST_TEST(!sums.confusion.defined());  // validation keeps no confusion counts
}

BOOST_AUTO_TEST_CASE(a_test_batch_is_only_summed_with_its_confusion_counts) {
  skein::core::EvalStep step(step_parts());
  history.new_epoch();
  skein::core::EvalSums sums;
  sums.unrecorded = true;
  auto b = batch(7);
  step.run(b, false, sums);
  BOOST_TEST(callback->seen.empty());
  BOOST_TEST(history.batches().rows() == 0u);
  BOOST_TEST_REQUIRE(sums.confusion.defined());
  BOOST_TEST(sums.confusion.sum().item<std::int64_t>() == 7);
  sums.settle();
  BOOST_TEST(sums.confusion.diagonal().sum().item<double>() == sums.values[1]);  // the diagonal: correct ones
}

BOOST_AUTO_TEST_SUITE_END()
