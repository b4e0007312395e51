#define BOOST_TEST_MODULE checkpoint
#include <boost/test/unit_test.hpp>

#include "skein/testing.hpp"

// The checkpoint callback alone: which checkpoints it asks for, and when.
using skein::testing::FakeRun;

BOOST_FIXTURE_TEST_SUITE(checkpoint, skein::testing::CallbackFixture)

// checkpoint's monitor left unset: valid_loss when the run validates, and no
// "best" (rather than an error) when it does not.
BOOST_AUTO_TEST_CASE(checkpoint_default_monitor_follows_the_run) {
  FakeRun without(harness);
  auto cp = make("checkpoint", nlohmann::json::object());
  for (double v : {1.0, 0.5}) {
    without.epoch_with("train_loss", v);
    cp->on_epoch_end(without);
  }
  using Request = skein::testing::CheckpointRequest;
  BOOST_TEST(without.checkpoints ==
             std::vector<Request>({{"epoch_0001", {}}, {"epoch_0002", {"epoch_0001"}}}));
  FakeRun with(harness);
  auto cp2 = make("checkpoint", nlohmann::json::object());
  with.epoch_with("valid_loss", 1.0);
  cp2->on_epoch_end(with);
  BOOST_TEST(with.checkpoints == std::vector<Request>({{"epoch_0001", {}}, {"best", {}}}));
}

BOOST_AUTO_TEST_CASE(checkpoint_keeps_the_last_k_and_the_best) {
  FakeRun ctx(harness);
  auto cp = make("checkpoint", {{"keep_last", 2}});
  for (double v : {1.0, 0.8, 0.9}) {
    ctx.epoch_with("valid_loss", v);
    cp->on_epoch_end(ctx);
  }
  using Request = skein::testing::CheckpointRequest;
  const std::vector<Request> expected = {{"epoch_0001", {}}, {"best", {}},
                                         {"epoch_0002", {}}, {"best", {}},
                                         {"epoch_0003", {"epoch_0001"}}};
  BOOST_TEST(ctx.checkpoints == expected);
  // Its state carries what it keeps, so a resumed run deletes the right ones.
  auto resumed = make("checkpoint", {{"keep_last", 2}});
  resumed->load_state(nlohmann::json::parse(cp->state().dump()));
  ctx.checkpoints.clear();
  ctx.epoch_with("valid_loss", 0.95);
  resumed->on_epoch_end(ctx);
  BOOST_TEST(ctx.checkpoints == std::vector<Request>({{"epoch_0004", {"epoch_0002"}}}));
}

// every_n_steps counts optimizer steps (not micro-batches, not validation
// batches) over the whole run, keeps the last K step checkpoints apart from
// the epoch ones, and carries the count through its state.
BOOST_AUTO_TEST_CASE(checkpoint_every_n_steps_counts_optimizer_steps) {
  FakeRun ctx(harness);
  auto cp = make("checkpoint", {{"every", 0}, {"every_n_steps", 2}, {"keep_last", 2}, {"monitor", ""}});
  skein::Batch batch{torch::zeros({1}), torch::zeros({1})};
  auto run_batches = [&](std::shared_ptr<skein::Callback>& c, int n) {
    for (int i = 0; i < n; ++i) {
      batch.training = i % 3 != 2;           // every third: a validation batch
      batch.optimizer_step = i % 3 == 1;     // accumulation: a step every other train batch
      c->on_batch_end(ctx, batch);
    }
  };
  run_batches(cp, 12);  // 4 steps
  using Request = skein::testing::CheckpointRequest;
  BOOST_TEST(ctx.checkpoints == std::vector<Request>({{"step_00000002", {}}, {"step_00000004", {}}}));
  auto resumed = make("checkpoint", {{"every", 0}, {"every_n_steps", 2}, {"keep_last", 2}, {"monitor", ""}});
  resumed->load_state(nlohmann::json::parse(cp->state().dump()));
  ctx.checkpoints.clear();
  run_batches(resumed, 6);  // steps 5 and 6
  BOOST_TEST(ctx.checkpoints == std::vector<Request>({{"step_00000006", {"step_00000002"}}}));
}

BOOST_AUTO_TEST_SUITE_END()
