#define BOOST_TEST_MODULE training
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <numeric>

#include <boost/asio/thread_pool.hpp>

#include "plugins/probe_model.hpp"
#include "skein/training/data/data_split.hpp"
#include "skein/training/run/log_stream.hpp"
#include "skein/training/device/mixed_precision.hpp"
#include "skein/host/option_schema.hpp"
#include "skein/training/engine/trainer.hpp"
#include "skein/loss.hpp"
#include "skein/io/npy.hpp"
#include "test_support.hpp"

using skein::core::Trainer;

namespace {

struct Fixture {
  Fixture() { test::load_test_plugins(registry); }

  skein::core::RunConfig config(const nlohmann::json& cfg, std::vector<std::string> plugins = {}) {
    test::write_text(tmp.str("c.json"), cfg.dump());
    return skein::core::resolve_config({tmp.str("c.json"), plugins, {}}, registry);
  }
  std::unique_ptr<Trainer> trainer(const nlohmann::json& cfg, std::vector<std::string> plugins = {}) {
    return std::make_unique<Trainer>(config(cfg, plugins), registry, skein::RunInfo{}, null_log);
  }

  skein::core::PluginRegistry registry;
  skein::core::NullStream null_log;
  test::TempDir tmp;
};

std::vector<torch::Tensor> parameters(Trainer& t) { return t.model_base().parameters(); }

// The history without durations (which differ from run to run).
nlohmann::json without_durations(nlohmann::json epochs) {
  for (auto& e : epochs) e.erase("dur");
  return epochs;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(training, Fixture)

BOOST_AUTO_TEST_CASE(loss_decreases_on_synthetic_data) {
  auto cfg = test::synthetic_config();
  cfg["max_epochs"] = 5;
  auto t = trainer(cfg);
  BOOST_TEST(t->fit() == 5);
  const auto& h = t->history();
  BOOST_REQUIRE(h.size() == 5u);
  const double first = h.get(0, "train_loss").get<double>();
  const double last = h.get(-1, "train_loss").get<double>();
  BOOST_TEST(last < first * 0.8, "train_loss " << first << " -> " << last);
  BOOST_TEST(h.get(-1, "valid_acc").get<double>() > 0.6);
  auto test = t->test();
  BOOST_REQUIRE(test.has_value());
  BOOST_TEST(test->samples == 128);
  BOOST_TEST(test->accuracy.value_or(0) > 0.6);
}

// cross_entropy takes one-hot or soft labels [N, C] as libtorch does:
// one-hot labels train as the class ids they encode; accuracy is against the
// most likely class; rows that are not probabilities, and nll, are refused.
BOOST_AUTO_TEST_CASE(class_probabilities_are_targets_of_cross_entropy) {
  torch::manual_seed(3);
  const auto inputs = torch::randn({256, 8});
  const auto ids = inputs.narrow(1, 0, 4).argmax(1);
  const auto one_hot = torch::one_hot(ids, 4).to(torch::kFloat32);
  auto save = [&](const std::string& name, const torch::Tensor& t) {
    test::write_text(tmp.str(name), skein::npy_bytes(t));
    return tmp.str(name);
  };
  auto with_targets = [&](const std::string& targets) {
    auto cfg = test::synthetic_config();
    cfg["data"] = {{"plugin", "npy"}, {"train_inputs", save("x.npy", inputs)}, {"train_targets", targets}};
    return cfg;
  };
  auto by_ids = trainer(with_targets(save("ids.npy", ids)));
  by_ids->fit();
  auto by_one_hot = trainer(with_targets(save("one_hot.npy", one_hot)));
  by_one_hot->fit();
  for (const char* key : {"train_loss", "valid_loss", "valid_acc"})
    BOOST_TEST(by_one_hot->history().get(-1, key).get<double>() == by_ids->history().get(-1, key).get<double>(),
               boost::test_tools::tolerance(1e-5));
  BOOST_TEST(by_ids->history().get(-1, "valid_acc").get<double>() > 0.5);

  auto soft = trainer(with_targets(save("soft.npy", one_hot * 0.9 + 0.025)));
  BOOST_TEST(soft->fit() == 3);
  const std::string off = test::message_of<std::runtime_error>(
      [&] { trainer(with_targets(save("off.npy", one_hot * 0.5)))->fit(); });
  BOOST_TEST(off.find("each row of class probabilities must sum to 1") != std::string::npos, off);
  auto cfg = with_targets(save("one_hot.npy", one_hot));
  cfg["loss"] = {{"plugin", "nll"}};
  const std::string nll = test::message_of<skein::ConfigError>([&] { trainer(cfg)->fit(); });
  BOOST_TEST(nll.find("use the loss cross_entropy for one-hot or soft labels") != std::string::npos, nll);
}

// Class weights: cross_entropy's weight is PyTorch's (the weighted mean of
// the per-sample losses), bce_with_logits' pos_weight weighs the positive
// term; a weight count that does not fit the outputs is a config error.
// Epoch scores (scoring's valid_f1) are in the record before any
// on_epoch_end: early stopping listed first can watch them.
BOOST_AUTO_TEST_CASE(epoch_scores_are_recorded_before_on_epoch_end) {
  auto cfg = test::synthetic_config();
  cfg["callbacks"] = {{{"plugin", "early_stopping"}, {"monitor", "valid_f1"}, {"patience", 100}},
                      {{"plugin", "scoring"}, {"scores", {"valid_f1", "train_recall"}}}};
  auto t = trainer(cfg);
  BOOST_TEST(t->fit() == 3);
  for (long e = 0; e < 3; ++e) {
    const double f1 = t->history().get(e, "valid_f1").get<double>();
    BOOST_TEST((f1 > 0.3 && f1 <= 1.0), f1);
    BOOST_TEST(t->history().get(e, "train_recall").is_number());
    BOOST_TEST(t->history().get(e, "valid_f1_best").is_boolean());  // print_log's '*' marks
  }
  BOOST_TEST(t->history().get(0, "valid_f1_best").get<bool>());
}

// precision bf16-mixed: matrix products in bfloat16 inside the scope only;
// a run trains as well as in float32, with float32 parameters, and a
// different (rounded) loss, which shows autocast was on.
BOOST_AUTO_TEST_CASE(bf16_mixed_precision) {
  const auto a = torch::randn({4, 4});
  {
    const skein::core::MixedPrecisionScope on(skein::core::Precision::bf16_mixed, false);
    BOOST_TEST((torch::mm(a, a).scalar_type() == torch::kBFloat16));
    {
      const skein::core::MixedPrecisionScope nested(skein::core::Precision::bf16_mixed, false);
    }
    BOOST_TEST((torch::mm(a, a).scalar_type() == torch::kBFloat16));
  }
  BOOST_TEST((torch::mm(a, a).scalar_type() == torch::kFloat32));

  auto cfg = test::synthetic_config();
  auto fp32 = trainer(cfg);
  fp32->fit();
  cfg["precision"] = "bf16-mixed";
  auto bf16 = trainer(cfg);
  BOOST_TEST(bf16->fit() == 3);
  for (const auto& p : parameters(*bf16)) BOOST_TEST((p.scalar_type() == torch::kFloat32));
  const double loss32 = fp32->history().get(-1, "train_loss").get<double>();
  const double loss16 = bf16->history().get(-1, "train_loss").get<double>();
  BOOST_TEST(loss16 != loss32);
  BOOST_TEST(std::abs(loss16 - loss32) < 0.05 * loss32, loss16 << " vs " << loss32);
  BOOST_TEST(bf16->history().get(-1, "valid_acc").get<double>() > 0.6);
  BOOST_TEST((torch::mm(a, a).scalar_type() == torch::kFloat32));  // off again after training

  cfg["precision"] = "16";
  const auto err = test::message_of<skein::ConfigError>([&] { trainer(cfg); });
  BOOST_TEST(err.find("precision: must be 32, bf16-mixed or 16-mixed, got '16'") != std::string::npos, err);
  // float16 needs CUDA's autocast and loss scaling: one line, not a CPU run.
  cfg["precision"] = "16-mixed";
  cfg["device"] = "cpu";
  const auto cpu16 = test::message_of<skein::ConfigError>([&] { trainer(cfg); });
  BOOST_TEST(cpu16.find("precision: \"16-mixed\" needs a CUDA device, and this run is on the CPU (cpu)") !=
                 std::string::npos,
             cpu16);
}

// valid_stratified: each class gives floor(fraction * its count) rows to
// validation, whatever the seed; the two parts cover every row once.
BOOST_AUTO_TEST_CASE(stratified_split_keeps_each_class_share) {
  const auto labels = torch::cat({torch::zeros({90}, torch::kLong), torch::ones({10}, torch::kLong)});
  const skein::core::DataSplit all(skein::core::memory_source({torch::arange(100).unsqueeze(1), labels}));
  for (const std::uint64_t seed : {0u, 1u, 2u}) {
    const auto [train, valid] = all.split_off_stratified(0.1, seed, labels);
    BOOST_TEST_REQUIRE(valid.size() == 10);
    BOOST_TEST(train.size() == 90);
    std::vector<std::int64_t> every(10);
    std::iota(every.begin(), every.end(), 0);
    const auto v = valid.fetch(every, {});
    BOOST_TEST(v.targets.sum().item<std::int64_t>() == 1);  // 9 of class 0, 1 of class 1
    std::vector<std::int64_t> rest(90);
    std::iota(rest.begin(), rest.end(), 0);
    const auto ids = torch::cat({v.inputs.reshape({-1}), train.fetch(rest, {}).inputs.reshape({-1})});
    BOOST_TEST(std::get<0>(torch::_unique(ids)).numel() == 100);
  }
}

// A resumed epoch starts its prefetcher at the next batch: the batches
// before it are not fetched, and each later one gets the augmentation seed
// it has in the whole pass (with worker threads or without).
BOOST_AUTO_TEST_CASE(a_prefetcher_started_mid_pass_keeps_each_batch_and_seed) {
  struct SeedSource final : skein::SampleSource {
    std::int64_t size() const override { return 40; }
    skein::TensorSplit fetch(const std::vector<std::int64_t>& indices, const skein::FetchOptions& o) const override {
      ++fetches;
      const auto n = static_cast<std::int64_t>(indices.size());
      return {torch::full({n, 1}, static_cast<double>(o.seed % 1000003), torch::kFloat64),
              torch::tensor(indices, torch::kLong)};
    }
    mutable std::atomic<int> fetches{0};
  };
  auto source = std::make_shared<SeedSource>();
  const skein::core::DataSplit split(source);
  std::vector<std::vector<std::int64_t>> batches;
  for (std::int64_t b = 0; b < 10; ++b) batches.push_back({4 * b, 4 * b + 1, 4 * b + 2, 4 * b + 3});
  boost::asio::thread_pool pool(2);
  for (auto* workers : {static_cast<boost::asio::thread_pool*>(nullptr), &pool}) {
    auto pass = [&](std::size_t first) {
      skein::core::Prefetcher::Options o;
      o.fetch.seed = 7;
      o.pool = workers;
      o.first = first;
      source->fetches = 0;
      skein::core::Prefetcher data(split, batches, o);
      std::vector<skein::TensorSplit> out;
      while (auto b = data.next()) out.push_back(*b);
      return out;
    };
    const auto whole = pass(0);
    const auto rest = pass(6);
    BOOST_TEST(source->fetches.load() == 4);
    BOOST_REQUIRE(whole.size() == 10u);
    BOOST_REQUIRE(rest.size() == 4u);
    for (std::size_t i = 0; i < rest.size(); ++i) {
      BOOST_TEST(torch::equal(rest[i].targets, whole[6 + i].targets));
      BOOST_TEST(torch::equal(rest[i].inputs, whole[6 + i].inputs));
    }
    BOOST_TEST(pass(12).empty());  // past the end: nothing
  }
}

// A streaming split's targets are checked by next() before they leave the
// host (no read from the device), and the check's error surfaces there.
BOOST_AUTO_TEST_CASE(a_prefetcher_checks_targets_on_the_host_as_batches_come) {
  struct IdSource final : skein::SampleSource {  // sample i has target i
    std::int64_t size() const override { return 12; }
    skein::TensorSplit fetch(const std::vector<std::int64_t>& indices, const skein::FetchOptions&) const override {
      return {torch::zeros({static_cast<std::int64_t>(indices.size()), 1}), torch::tensor(indices, torch::kLong)};
    }
  };
  const skein::core::DataSplit split(std::make_shared<IdSource>());
  const std::vector<std::vector<std::int64_t>> batches{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}};
  boost::asio::thread_pool pool(2);
  for (auto* workers : {static_cast<boost::asio::thread_pool*>(nullptr), &pool}) {
    skein::core::Prefetcher::Options o;
    o.pool = workers;
    std::vector<std::int64_t> seen;
    o.check_targets = [&](const torch::Tensor& t) {
      BOOST_TEST(t.is_cpu());
      if (t.max().item<std::int64_t>() > 8) throw std::runtime_error("class id 9 out of range");
      seen.push_back(t[0].item<std::int64_t>());
    };
    skein::core::Prefetcher data(split, batches, o);
    BOOST_TEST(data.next().has_value());
    BOOST_TEST(data.next().has_value());
    BOOST_TEST(test::message_of<std::runtime_error>([&] { data.next(); }) == "class id 9 out of range");
    BOOST_TEST(seen == (std::vector<std::int64_t>{0, 4}));
  }
}

// standardize in the trainer: the scaling of the training split (after
// valid_split) is applied before every forward, predict included.
BOOST_AUTO_TEST_CASE(standardize_scales_what_the_model_sees) {
  auto cfg = test::synthetic_config();
  cfg["standardize"] = true;
  cfg["max_epochs"] = 1;
  auto t = trainer(cfg);
  const auto& scaling = t->input_scaling();
  BOOST_TEST_REQUIRE(scaling.active());
  BOOST_TEST((scaling.mean.sizes() == torch::IntArrayRef({16})));
  t->fit();
  const auto x = torch::randn({5, 16}) * 3 + 1;
  torch::NoGradGuard no_grad;
  BOOST_TEST(torch::allclose(t->predict(x), t->model_base().forward((x - scaling.mean) / scaling.std)));
  BOOST_TEST(!trainer(test::synthetic_config())->input_scaling().active());
}

BOOST_AUTO_TEST_CASE(epoch_values_are_sample_weighted_means_of_batches) {
  auto t = trainer(test::synthetic_config());
  t->fit();
  const auto& epoch = t->history().epochs()[0];
  double sum = 0, n = 0, vsum = 0, vn = 0;
  std::size_t train_rows = 0, valid_rows = 0;
  for (const auto& b : epoch["batches"]) {
    if (b.contains("train_loss")) {
      sum += b["train_loss"].get<double>() * b["train_batch_size"].get<double>();
      n += b["train_batch_size"].get<double>();
      ++train_rows;
    } else {
      vsum += b["valid_acc"].get<double>() * b["valid_batch_size"].get<double>();
      vn += b["valid_batch_size"].get<double>();
      ++valid_rows;
    }
  }
  BOOST_TEST(n == 384.0);  // 512 samples, 25% held out
  BOOST_TEST(vn == 128.0);
  BOOST_TEST(train_rows == 12u);
  BOOST_TEST(valid_rows == 4u);
  BOOST_TEST(epoch["train_loss"].get<double>() == sum / n, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(epoch["valid_acc"].get<double>() == vsum / vn, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(epoch["valid_loss_best"].get<bool>());  // the first epoch is the best so far
  BOOST_TEST(epoch.contains("dur"));
}

BOOST_AUTO_TEST_CASE(same_seed_gives_same_weights_and_history) {
  auto cfg = test::synthetic_config();
  cfg["model"]["dropout"] = 0.2;  // exercises the global generator too
  auto a = trainer(cfg);
  a->fit();
  auto b = trainer(cfg);
  b->fit();
  auto pa = parameters(*a), pb = parameters(*b);
  BOOST_REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) BOOST_TEST(torch::equal(pa[i], pb[i]));
  BOOST_TEST(without_durations(a->history().epochs()) == without_durations(b->history().epochs()));

  cfg["seed"] = 8;
  auto c = trainer(cfg);
  c->fit();
  BOOST_TEST(!torch::equal(parameters(*c)[0], pa[0]));
}

BOOST_AUTO_TEST_CASE(hooks_run_in_skorch_order) {
  auto cfg = test::synthetic_config();
  cfg["max_epochs"] = 1;
  cfg["batch_size"] = 128;  // 384 train samples: 3 batches; 128 valid: 1 batch
  auto t = trainer(cfg, {"probe_callback"});
  t->fit();
  BOOST_TEST(t->history().get(-1, "probe_events").get<std::string>() == "TEbg.bg.bg.v.et");
}

BOOST_AUTO_TEST_CASE(callbacks_reach_the_users_own_model_type) {
  auto cfg = test::synthetic_config();
  cfg["model"] = {{"plugin", "probe_model"}, {"tag", "mine"}};
  auto t = trainer(cfg, {"probe_callback:use_model=true"});
  t->fit();
  BOOST_TEST(t->history().get(-1, "probe_tag").get<std::string>() == "mine");
  BOOST_TEST(t->history().get(-1, "probe_epochs_seen").get<long>() == 3);
  // The same object, by its own type, from outside the callbacks.
  BOOST_TEST(t->model<ProbeModel>().epochs_seen == std::vector<long>({1, 2, 3}));
}

BOOST_AUTO_TEST_CASE(asking_for_the_wrong_model_type_is_a_clear_error) {
  auto t = trainer(test::synthetic_config(), {"probe_callback:use_model=true"});
  try {
    t->fit();
    BOOST_FAIL("expected an error");
  } catch (const skein::ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find("ctx.model<") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_CASE(a_callback_can_stop_training) {
  auto cfg = test::synthetic_config();
  cfg["max_epochs"] = 6;
  auto t = trainer(cfg, {"probe_callback:stop_at=2"});
  BOOST_TEST(t->fit() == 2);
  BOOST_TEST(t->history().size() == 2u);
  BOOST_TEST(t->stop_reason() == "probe asked at epoch 2");
}

BOOST_AUTO_TEST_CASE(optimizers_are_built_from_config) {
  for (const char* name : {"sgd", "adam", "adamw"}) {
    auto cfg = test::synthetic_config();
    cfg["optimizer"] = {{"name", name}, {"lr", 0.01}};
    cfg["max_epochs"] = 1;
    auto t = trainer(cfg);
    t->fit();
    BOOST_TEST(std::isfinite(t->history().get(0, "train_loss").get<double>()), name);
  }
  auto cfg = test::synthetic_config();
  cfg["optimizer"] = {{"name", "sgd"}, {"lr", 0.01}, {"nesterov", true}};
  BOOST_CHECK_THROW(trainer(cfg), skein::ConfigError);  // nesterov without momentum
}

BOOST_AUTO_TEST_SUITE_END()
