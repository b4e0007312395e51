#include <boost/test/unit_test.hpp>

#include "engine_fixture.hpp"
#include "skein/training/config/config.hpp"
#include "skein/host/config_error.hpp"
#include "skein/training/run/log_stream.hpp"
#include "skein/training/engine/run_parts.hpp"
#include "test_support.hpp"

using skein::testing::message_of;

namespace {

struct AssemblyFixture {
  AssemblyFixture() { test::load_test_plugins(registry); }
  skein::core::RunConfig config(const nlohmann::json& cfg) {
    test::write_text(tmp.str("c.json"), cfg.dump());
    return skein::core::resolve_config({tmp.str("c.json"), {}, {}}, registry);
  }
  skein::core::PluginRegistry registry;
  skein::core::NullStream log;
  test::TempDir tmp;
  skein::RunInfo run;
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(run_parts, AssemblyFixture)

BOOST_AUTO_TEST_CASE(every_plugin_of_the_config_is_made_with_its_options_kept) {
  auto cfg = test::synthetic_config();
  cfg["callbacks"] = {{{"plugin", "timer"}}, {{"plugin", "early_stopping"}}};
  const auto c = config(cfg);
  skein::core::RunParts parts({c, registry, run, log});
  BOOST_TEST((parts.loss && parts.data && parts.model && parts.parallel && parts.optimizer && parts.history));
  BOOST_TEST(parts.callbacks.size() == 2u);
  BOOST_TEST(parts.options.size() == 8u);  // loss, data, model, parallel, optimizer, history, 2 callbacks
  BOOST_TEST(parts.data_info.num_classes == 4);
  BOOST_TEST(parts.splits.train.size() + parts.splits.valid.size() == 512);
  BOOST_TEST(parts.splits.test.has_value());
}

BOOST_AUTO_TEST_CASE(the_models_initial_weights_depend_on_the_seed_alone) {
  auto cfg = test::synthetic_config();
  auto first = config(cfg);
  cfg["data"]["samples"] = 300;  // another dataset draws other numbers
  auto second = config(cfg);
  skein::core::RunParts a({first, registry, run, log}), b({second, registry, run, log});
  BOOST_TEST(torch::equal(a.model->parameters()[0], b.model->parameters()[0]));
}

BOOST_AUTO_TEST_CASE(an_option_error_of_a_plugins_constructor_is_located_in_the_config) {
  auto cfg = test::synthetic_config();
  cfg["optimizer"] = {{"name", "sgd"}, {"nesterov", true}};  // valid alone; sgd refuses it without momentum
  const auto c = config(cfg);
  try {
    skein::core::RunParts parts({c, registry, run, log});
    BOOST_FAIL("nesterov without momentum was accepted");
  } catch (const skein::core::ConfigPathError& e) {
    BOOST_TEST(e.path() == "optimizer.nesterov");
  }
}

BOOST_AUTO_TEST_CASE(a_session_without_data_is_sized_by_the_configs_data_info) {
  auto c = config(test::synthetic_config());
  c.data.record = nullptr;
  c.data_info = {{6}, 2};
  skein::core::RunParts parts({c, registry, run, log});
  BOOST_TEST(parts.data.get() == nullptr);
  BOOST_TEST(parts.model->forward(torch::zeros({1, 6})).size(1) == 2);
  c.standardize = true;
  BOOST_TEST(skein::testing::contains(message_of<skein::ConfigError>([&] { skein::core::RunParts p({c, registry, run, log}); }),
                                      "standardize: needs the config's data"));
}

BOOST_AUTO_TEST_SUITE_END()
