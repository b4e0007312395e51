#include <boost/test/unit_test.hpp>

#include <set>

#include "engine_fixture.hpp"
#include "skein/kit/optimizers.hpp"
#include "skein/training/engine/step_pieces.hpp"
#include "skein/training/engine/train_step.hpp"

using engine_test::logged;

using engine_test::same;

namespace {

// Counts optimizer steps through a parallel wrapper's hooks.
struct CountingParallel : skein::Parallel {
  std::vector<bool> syncs;  // set_gradient_sync per micro-batch
  int finished = 0;
  void prepare(torch::nn::Module&) override {}
  void set_gradient_sync(bool enabled) override { syncs.push_back(enabled); }
  void finish_gradients() override { ++finished; }
  void all_reduce_sum(std::vector<double>&) override {}
  void all_reduce_max(std::vector<double>&) override {}
  void barrier() override {}
};

std::vector<torch::Tensor> copies(skein::Model& model) {
  std::vector<torch::Tensor> out;
  for (const auto& p : model.parameters()) out.push_back(p.detach().clone());
  return out;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(train_step, engine_test::Engine)

BOOST_AUTO_TEST_CASE(one_batch_runs_the_hooks_in_order_steps_and_records) {
  skein::core::TrainStep step(step_parts(), 1);
  history.new_epoch();
  const auto before = copies(*parts.model);
  auto b = batch(6);
  step.run(b, 0);
  BOOST_TEST(callback->seen == (std::vector<std::string>{"batch_begin", "grad", "batch_end"}));
  BOOST_TEST(b.optimizer_step);
  BOOST_TEST(b.training);
  BOOST_TEST(!same(before, copies(*parts.model)));
  BOOST_TEST(logged(history.batches(), "train_loss") == (std::vector<double>{b.loss.item<double>()}));
  BOOST_TEST(logged(history.batches(), "train_batch_size") == (std::vector<double>{6}));
}

BOOST_AUTO_TEST_CASE(accumulation_steps_once_a_group_and_the_last_group_is_shorter) {
  auto counting = std::make_shared<CountingParallel>();
  parts.parallel = counting;
  skein::core::TrainStep step(step_parts(), 2);
  history.new_epoch();
  std::vector<bool> steps, changed;
  for (long i = 0; i < 3; ++i) {  // groups {0, 1} and {2}
    const auto before = copies(*parts.model);
    auto b = batch(4, i);
    step.run(b, 3);
    steps.push_back(b.optimizer_step);
    changed.push_back(!same(before, copies(*parts.model)));
  }
  BOOST_TEST(steps == (std::vector<bool>{false, true, true}));
  BOOST_TEST(changed == steps);                 // the weights move only on a step
  BOOST_TEST(counting->syncs == steps);         // gradients are synced only for the step
  BOOST_TEST(counting->finished == 2);
}

BOOST_AUTO_TEST_CASE(without_a_known_epoch_length_every_group_is_full) {
  skein::core::TrainStep step(step_parts(), 2);
  history.new_epoch();
  auto b = batch(4, 2);
  step.run(b, 0);
  BOOST_TEST(!b.optimizer_step);  // batch 2 opens the group {2, 3}
}

// An optimizer over pieces (a sharded run's large parameters): the step that
// makes their states lays each field out whole, the pieces' states over it.
BOOST_AUTO_TEST_CASE(the_first_step_lays_the_pieces_states_out_whole) {
  using Adam = skein::LibtorchOptimizer<torch::optim::Adam, torch::optim::AdamOptions>;
  Adam factory(torch::optim::AdamOptions(0.01));
  const skein::core::StepPieces pieces(parts.model->parameters(), 8);  // the 8 x 4 weight in 4 pieces
  BOOST_REQUIRE(pieces.cuts_any());
  parts.optimizer = factory.create(pieces.tensors());
  auto step_parts_with_pieces = step_parts();
  step_parts_with_pieces.pieces = &pieces;
  step_parts_with_pieces.optimizer_factory = &factory;
  skein::core::TrainStep step(step_parts_with_pieces, 1);
  history.new_epoch();
  auto b = batch(6);
  step.run(b, 0);
  // Adam's moments: one storage per parameter (4: two weights cut, two
  // biases whole), not one per piece (9).
  auto moments = [&] {
    std::set<const void*> storages;
    for (const auto& entry : parts.optimizer->state())
      storages.insert(
          static_cast<const torch::optim::AdamParamState&>(*entry.second).exp_avg().storage().unsafeGetStorageImpl());
    return storages;
  };
  const auto laid = moments();
  BOOST_TEST(parts.optimizer->state().size() == 9u);
  BOOST_TEST(laid.size() == 4u);
  // Later steps go on in place: the same storages.
  auto c = batch(6, 1);
  step.run(c, 0);
  BOOST_TEST(moments() == laid);
}

BOOST_AUTO_TEST_SUITE_END()
