#define BOOST_TEST_MODULE lr_scheduler
#include <boost/test/unit_test.hpp>


#include "skein/testing.hpp"
#include "skein/io/input_file.hpp"

// The lr_scheduler callback alone: the learning rate each policy sets.
using skein::testing::FakeRun;

BOOST_FIXTURE_TEST_SUITE(lr_scheduler, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(lr_scheduler_step_cosine_and_plateau) {
  auto lrs = [&](const nlohmann::json& options, const std::vector<double>& losses) {
    FakeRun ctx(harness);
    auto s = make("lr_scheduler", options);
    s->on_train_begin(ctx);
    std::vector<double> out;
    for (double l : losses) {
      ctx.epoch_with("valid_loss", l);
      s->on_epoch_end(ctx);
      out.push_back(ctx.history().get(-1, "lr").get<double>());
    }
    return out;
  };
  auto step = lrs({{"policy", "step"}, {"step_size", 2}, {"gamma", 0.5}}, {1, 1, 1, 1, 1});
  BOOST_TEST(step == std::vector<double>({0.1, 0.1, 0.05, 0.05, 0.025}), boost::test_tools::per_element());
  auto cosine = lrs({{"policy", "cosine"}, {"t_max", 2}}, {1, 1, 1});
  BOOST_TEST(cosine[1] == 0.05, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(cosine[2] == 0.0, boost::test_tools::tolerance(1e-12));
  auto plateau = lrs({{"policy", "plateau"}, {"patience", 1}, {"factor", 0.5}}, {1, 0.5, 0.6, 0.7, 0.8, 0.9});
  BOOST_TEST(plateau == std::vector<double>({0.1, 0.1, 0.1, 0.1, 0.05, 0.05}), boost::test_tools::per_element());
}


// Per-step policies against the rates PyTorch's schedulers give: the rate
// each of 20 optimizer steps uses, in pytorch_schedules.json beside this file
// (tests/python/interop.py lr_schedules wrote it; test_interop checks that
// it still does).
BOOST_AUTO_TEST_CASE(per_step_policies_match_pytorch) {
  const auto expected = nlohmann::json::parse(
      skein::read_whole_file(PLUGIN_TEST_DIR "/pytorch_schedules.json")
          .value());
  const torch::Tensor none = torch::zeros({1});
  auto rates = [&](const nlohmann::json& options) {
    skein::testing::FakeRunOptions run;  // one batch per epoch: max_epochs 20 makes 20 optimizer steps
    run.config["max_epochs"] = 20;
    FakeRun ctx(harness, run);
    auto s = make("lr_scheduler", options);
    s->on_train_begin(ctx);
    std::vector<double> out;
    for (int step = 0; step < 20; ++step) {
      out.push_back(ctx.optimizer().param_groups()[0].options().get_lr());
      s->on_batch_end(ctx, skein::Batch{none, none});
    }
    return out;
  };
  auto same = [](const std::vector<double>& got, const nlohmann::json& want) {
    BOOST_TEST_REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      BOOST_TEST(got[i] == want[i].get<double>(), boost::test_tools::tolerance(1e-9) << "step " << i);
  };
  const nlohmann::json warm = {{"interval", "step"}, {"warmup_steps", 5}, {"warmup_start_factor", 0.1}};
  auto options = warm;
  options.update({{"policy", "cosine"}, {"eta_min", 0.001}});  // t_max 0: the 15 steps after warm-up
  same(rates(options), expected["warmup_cosine"]);
  options = warm;
  options.update({{"policy", "linear"}, {"eta_min", 0.001}, {"t_max", 15}});
  same(rates(options), expected["warmup_linear"]);
  same(rates({{"policy", "one_cycle"}, {"max_lr", 0.5}}), expected["one_cycle_cos"]);
  same(rates({{"policy", "one_cycle"}, {"max_lr", 0.5}, {"pct_start", 0.25}, {"anneal", "linear"},
              {"div_factor", 10}, {"final_div_factor", 100}}),
       expected["one_cycle_linear"]);
}

// Only an optimizer step moves a per-step schedule (not accumulation's
// micro-batches, not validation); "lr" is the epoch's last step's rate; the
// step count survives a checkpoint.
BOOST_AUTO_TEST_CASE(per_step_counts_optimizer_steps_and_resumes) {
  const torch::Tensor none = torch::zeros({1});
  skein::testing::FakeRunOptions run;
  run.config["max_epochs"] = 10;
  FakeRun ctx(harness, run);
  const nlohmann::json options = {{"policy", "step"}, {"interval", "step"}, {"step_size", 1}, {"gamma", 0.5}};
  auto s = make("lr_scheduler", options);
  s->on_train_begin(ctx);
  skein::Batch micro{none, none};
  micro.optimizer_step = false;
  skein::Batch valid{none, none};
  valid.training = false;
  s->on_batch_end(ctx, micro);
  s->on_batch_end(ctx, valid);
  BOOST_TEST(ctx.optimizer().param_groups()[0].options().get_lr() == 0.1);
  s->on_batch_end(ctx, skein::Batch{none, none});
  s->on_batch_end(ctx, skein::Batch{none, none});
  ctx.epoch_with("valid_loss", 1);
  s->on_epoch_end(ctx);
  BOOST_TEST(ctx.history().get(-1, "lr").get<double>() == 0.05);
  BOOST_TEST(ctx.optimizer().param_groups()[0].options().get_lr() == 0.025);

  auto resumed = make("lr_scheduler", options);
  resumed->load_state(s->state());
  FakeRun fresh(harness);
  resumed->on_train_begin(fresh);
  BOOST_TEST(fresh.optimizer().param_groups()[0].options().get_lr() == 0.025);
}

BOOST_AUTO_TEST_CASE(per_step_options_that_do_not_fit_are_refused) {
  auto err = [&](const nlohmann::json& options) {
    return skein::testing::message_of<skein::ConfigError>([&] { make("lr_scheduler", options); });
  };
  BOOST_TEST(skein::testing::contains(err({{"policy", "plateau"}, {"interval", "step"}}), "option 'interval' step does not go with policy plateau"));
  BOOST_TEST(skein::testing::contains(err({{"policy", "one_cycle"}, {"interval", "epoch"}}), "option 'interval' epoch does not go"));
  BOOST_TEST(skein::testing::contains(err({{"policy", "cosine"}, {"warmup_steps", 10}}), "option 'warmup_steps' counts optimizer steps"));
  BOOST_TEST(skein::testing::contains(err({{"policy", "one_cycle"}, {"pct_start", 1.5}}), "option 'pct_start' must be in (0, 1)"));
  BOOST_TEST(skein::testing::contains(err({{"policy", "cyclic"}}), "must be step, cosine, linear, plateau or one_cycle, got 'cyclic'"));
}

// eta_min above the optimizer's lr would make cosine and linear raise the
// rate: refused before the first epoch, naming the option. At lr it is a
// constant rate; other policies do not read it.
BOOST_AUTO_TEST_CASE(eta_min_above_the_learning_rate_is_refused_at_the_start) {
  auto start = [&](const nlohmann::json& options) {
    FakeRun ctx(harness);  // lr 0.1
    return skein::testing::message_of<skein::ConfigError>([&] { make("lr_scheduler", options)->on_train_begin(ctx); });
  };
  for (const char* policy : {"cosine", "linear"}) {
    const std::string err = start({{"policy", policy}, {"eta_min", 0.5}});
    BOOST_TEST(skein::testing::contains(err, "option 'eta_min' 0.5 is above the optimizer's lr 0.1"), err);
    BOOST_TEST(start({{"policy", policy}, {"eta_min", 0.1}}).empty(), policy);
  }
  BOOST_TEST(start({{"policy", "step"}, {"eta_min", 0.5}}).empty());
}

// Two schedules would each set the rate over the other's: refused before
// the first batch, in one line naming both entries.
BOOST_AUTO_TEST_CASE(two_lr_schedulers_are_refused_naming_both) {
  const nlohmann::json callbacks = {{{"plugin", "lr_scheduler"}, {"policy", "cosine"}},
                                    {{"plugin", "print_log"}},
                                    {{"plugin", "lr_scheduler"}, {"policy", "step"}}};
  const std::string message = skein::testing::message_of<skein::ConfigError>([&] {
    skein::testing::EngineRun run(skein::testing::small_run("callbacks", callbacks));
    run.fit();
  });
  BOOST_TEST(message.find("callbacks[0] and callbacks[2] are both lr_scheduler") != std::string::npos, message);
  BOOST_TEST(message.find('\n') == std::string::npos, message);
  // One is fine.
  skein::testing::EngineRun one(skein::testing::small_run("callbacks", {callbacks[0], callbacks[1]}));
  BOOST_TEST(one.fit() == std::vector<long>({2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
