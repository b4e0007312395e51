#define BOOST_TEST_MODULE callbacks
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "skein/callback.hpp"
#include "skein/core/log_stream.hpp"
#include "skein/core/option_schema.hpp"
#include "skein/parallel.hpp"
#include "test_support.hpp"

// Callbacks alone, against a context whose history the test writes.

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

class FakeContext final : public skein::TrainContext {
 public:
  FakeContext() : optimizer_({weight_}, torch::optim::SGDOptions(0.1)) {}
  const skein::RunInfo& run() const override { return run_; }
  skein::History& history() override { return history_; }
  skein::Model& model_base() override { throw std::logic_error("no model in this test"); }
  torch::optim::Optimizer& optimizer() override { return optimizer_; }
  skein::Parallel& parallel() override { throw std::logic_error("no parallel in this test"); }
  long epoch() const override { return static_cast<long>(history_.size()); }
  void request_stop(const std::string& reason) override {
    if (stop_reason.empty()) stop_reason = reason;
  }
  bool stop_requested() const override { return !stop_reason.empty(); }
  std::ostream& log() override { return null_; }
  long batches_per_epoch() const override { return 1; }
  const nlohmann::json& config() const override { return config_; }
  void request_checkpoint(const std::string& name, const std::vector<std::string>& remove) override {
    checkpoints.push_back({name, remove});
  }
  std::string checkpoint_root() const override { return "/nonexistent"; }

  // Appends an epoch holding `key` = value.
  void epoch_with(const std::string& key, double value) {
    history_.new_epoch();
    history_.commit_batches();
    history_.record(key, value);
  }

  std::string stop_reason;
  std::vector<std::pair<std::string, std::vector<std::string>>> checkpoints;
  nlohmann::json config_ = {{"max_epochs", 10}};

 private:
  skein::RunInfo run_;
  skein::History history_;
  torch::Tensor weight_ = torch::zeros({1}, torch::requires_grad());
  torch::optim::SGD optimizer_;
  skein::core::NullStream null_;
};

struct Fixture {
  Fixture() { test::load_test_plugins(registry); }
  std::shared_ptr<skein::Callback> make(const std::string& name, const nlohmann::json& options = {}) {
    const auto& rec = registry.require(name);
    auto values = skein::core::validate_options(rec.options, options.is_null() ? nlohmann::json::object() : options, name);
    skein::Options opts(name, values);
    return registry.create<skein::Callback>(rec, skein::PluginArgs{opts, run, nullptr});
  }
  // Runs `cb` over epochs with these values of `key`; returns the epoch at
  // which it asked to stop (0: never).
  long stop_epoch(skein::Callback& cb, FakeContext& ctx, const std::string& key,
                  const std::vector<double>& values) {
    for (double v : values) {
      ctx.epoch_with(key, v);
      cb.on_epoch_end(ctx);
      if (ctx.stop_requested()) return ctx.epoch();
    }
    return 0;
  }
  skein::core::PluginRegistry registry;
  skein::RunInfo run;
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(callbacks, Fixture)

BOOST_AUTO_TEST_CASE(early_stopping_counts_epochs_without_improvement_and_nan_never_improves) {
  FakeContext ctx;
  auto es = make("early_stopping", {{"patience", 3}});
  // Improves at 1 and 2; 3, 4 and the NaN at 5 do not.
  BOOST_TEST(stop_epoch(*es, ctx, "valid_loss", {1.0, 0.9, 0.95, 0.91, kNaN, 0.5}) == 5);
  BOOST_TEST(ctx.stop_reason.find("valid_loss did not improve for 3 epochs") != std::string::npos, ctx.stop_reason);
}

BOOST_AUTO_TEST_CASE(early_stopping_direction_comes_from_the_name_unless_given) {
  FakeContext acc;
  auto higher = make("early_stopping", {{"monitor", "valid_acc"}, {"patience", 1}});
  BOOST_TEST(stop_epoch(*higher, acc, "valid_acc", {0.5, 0.6, 0.55}) == 3);
  FakeContext flipped;
  auto lower = make("early_stopping", {{"monitor", "valid_acc"}, {"patience", 1}, {"lower_is_better", true}});
  BOOST_TEST(stop_epoch(*lower, flipped, "valid_acc", {0.5, 0.6}) == 2);
}

BOOST_AUTO_TEST_CASE(early_stopping_thresholds) {
  FakeContext rel;
  auto es = make("early_stopping", {{"patience", 1}, {"threshold", 0.1}});
  BOOST_TEST(stop_epoch(*es, rel, "valid_loss", {1.0, 0.95}) == 2);  // needs < 0.9
  FakeContext abs;
  auto es2 = make("early_stopping", {{"patience", 1}, {"threshold", 0.01}, {"threshold_mode", "abs"}});
  BOOST_TEST(stop_epoch(*es2, abs, "valid_loss", {1.0, 0.98, 0.975}) == 3);
}

BOOST_AUTO_TEST_CASE(early_stopping_state_survives_a_restart) {
  FakeContext ctx;
  auto first = make("early_stopping", {{"patience", 2}});
  BOOST_TEST(stop_epoch(*first, ctx, "valid_loss", {1.0, 1.1}) == 0);
  auto second = make("early_stopping", {{"patience", 2}});
  second->load_state(nlohmann::json::parse(first->state().dump()));
  BOOST_TEST(stop_epoch(*second, ctx, "valid_loss", {1.2}) == 3);
}

// One rule for every monitoring callback: a key the history lacks is a
// config error naming the plugin, the key and the keys the history holds.
BOOST_AUTO_TEST_CASE(a_missing_monitored_key_fails_alike_in_every_callback) {
  const std::vector<std::pair<std::string, nlohmann::json>> monitoring = {
      {"early_stopping", {{"monitor", "valid_los"}}},
      {"checkpoint", {{"monitor", "valid_los"}}},
      {"lr_scheduler", {{"policy", "plateau"}, {"monitor", "valid_los"}}}};
  for (const auto& [name, options] : monitoring) {
    FakeContext ctx;
    auto cb = make(name, options);
    cb->on_train_begin(ctx);
    ctx.epoch_with("valid_loss", 1.0);
    try {
      cb->on_epoch_end(ctx);
      BOOST_ERROR(name + ": expected an error");
    } catch (const skein::ConfigError& e) {
      const std::string what = e.what();
      BOOST_TEST(what.rfind(name + ": option 'monitor' names 'valid_los'", 0) == 0, what);
      BOOST_TEST(what.find("(it holds: valid_loss)") != std::string::npos, what);
    }
  }
  BOOST_CHECK_THROW(make("early_stopping", {{"patience", 0}}), skein::ConfigError);
}

// checkpoint's monitor left unset: valid_loss when the run validates, and no
// "best" (rather than an error) when it does not.
BOOST_AUTO_TEST_CASE(checkpoint_default_monitor_follows_the_run) {
  FakeContext without;
  auto cp = make("checkpoint", nlohmann::json::object());
  for (double v : {1.0, 0.5}) {
    without.epoch_with("train_loss", v);
    cp->on_epoch_end(without);
  }
  using Request = std::pair<std::string, std::vector<std::string>>;
  BOOST_TEST(without.checkpoints ==
             std::vector<Request>({{"epoch_0001", {}}, {"epoch_0002", {"epoch_0001"}}}));
  FakeContext with;
  auto cp2 = make("checkpoint", nlohmann::json::object());
  with.epoch_with("valid_loss", 1.0);
  cp2->on_epoch_end(with);
  BOOST_TEST(with.checkpoints == std::vector<Request>({{"epoch_0001", {}}, {"best", {}}}));
}

BOOST_AUTO_TEST_CASE(checkpoint_keeps_the_last_k_and_the_best) {
  FakeContext ctx;
  auto cp = make("checkpoint", {{"keep_last", 2}});
  for (double v : {1.0, 0.8, 0.9}) {
    ctx.epoch_with("valid_loss", v);
    cp->on_epoch_end(ctx);
  }
  using Request = std::pair<std::string, std::vector<std::string>>;
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

BOOST_AUTO_TEST_CASE(lr_scheduler_step_cosine_and_plateau) {
  auto lrs = [&](const nlohmann::json& options, const std::vector<double>& losses) {
    FakeContext ctx;
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

BOOST_AUTO_TEST_CASE(bad_callback_options_are_config_errors) {
  BOOST_CHECK_THROW(make("lr_scheduler", {{"policy", "exp"}}), skein::ConfigError);
  BOOST_CHECK_THROW(make("grad_clip", {{"mode", "both"}}), skein::ConfigError);
  BOOST_CHECK_THROW(make("scoring", {{"scores", {"valid_acc"}}}), skein::ConfigError);
  BOOST_CHECK_THROW(make("scoring", {{"scores", {"test_acc"}}}), skein::ConfigError);
  BOOST_CHECK_THROW(make("checkpoint", {{"keep_last", 0}}), skein::ConfigError);
  BOOST_CHECK_THROW(make("progress_bar", {{"mode", "fancy"}}), skein::ConfigError);
}

BOOST_AUTO_TEST_SUITE_END()
