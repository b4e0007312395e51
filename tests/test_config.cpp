#define BOOST_TEST_MODULE config
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>

#include "skein/training/config/config.hpp"
#include "skein/errors.hpp"
#include "skein/model.hpp"
#include "test_support.hpp"

using skein::ConfigError;
using skein::core::ConfigSources;
using skein::core::resolve_config;

namespace {

struct Fixture {
  Fixture() { test::load_test_plugins(registry); }
  skein::core::PluginRegistry registry;
  test::TempDir tmp;

  // Resolves `config` (written to a file) with flags; returns the error text or "".
  std::string error_of(const nlohmann::json& config, std::vector<std::string> plugins = {},
                       std::vector<std::string> sets = {}) {
    test::write_text(tmp.str("c.json"), config.dump());
    return test::message_of<ConfigError>([&] { resolve_config(ConfigSources{tmp.str("c.json"), plugins, sets}, registry); });
  }
  bool mentions(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(config, Fixture)

BOOST_AUTO_TEST_CASE(a_valid_config_resolves_with_defaults_and_versions) {
  test::write_text(tmp.str("c.json"), test::synthetic_config().dump());
  auto rc = resolve_config(ConfigSources{tmp.str("c.json"), {}, {}}, registry);
  BOOST_TEST(rc.batch_size == 32);
  BOOST_TEST(rc.max_epochs == 3);
  BOOST_TEST(rc.model.record->name == "mlp");
  BOOST_TEST(rc.history.record->name == "local");  // default
  BOOST_TEST(rc.parallel.record->name == "none");  // default
  BOOST_TEST(rc.model.options["activation"].get<std::string>() == "relu");  // plugin default
  BOOST_TEST(rc.resolved["plugin_versions"]["mlp"]["version"].get<std::string>() == "1.0.0");
  BOOST_TEST(rc.resolved["optimizer"]["momentum"].get<double>() == 0.9);
  BOOST_TEST(rc.resolved["optimizer"]["nesterov"].get<bool>() == false);
}

BOOST_AUTO_TEST_CASE(unknown_top_level_key_suggests_the_right_one) {
  auto cfg = test::synthetic_config();
  cfg["max_epoch"] = 3;
  auto err = error_of(cfg);
  BOOST_TEST(mentions(err, "max_epoch: unknown key"), err);
  BOOST_TEST(mentions(err, "did you mean 'max_epochs'"), err);
  BOOST_TEST(mentions(err, "c.json"), err);
}

// Names other tools use are not typos: they map to skein's key.
BOOST_AUTO_TEST_CASE(other_tools_key_names_suggest_skeins_key) {
  for (const auto& [word, meaning] : std::vector<std::pair<std::string, std::string>>{
           {"lr", "optimizer.lr"}, {"learning_rate", "optimizer.lr"}, {"epochs", "max_epochs"},
           {"num_epochs", "max_epochs"}, {"dataset", "data"}, {"gradient_accumulation_steps", "accumulate_steps"}}) {
    auto cfg = test::synthetic_config();
    cfg[word] = 1;
    const std::string err = error_of(cfg);
    BOOST_TEST(mentions(err, word + ": unknown key (did you mean '" + meaning + "'?)"), err);
  }
}

// Several processes and no parallel plugin: ddp, said; one named stays.
BOOST_AUTO_TEST_CASE(several_processes_without_a_parallel_plugin_use_ddp) {
  test::write_text(tmp.str("c.json"), test::synthetic_config().dump());
  ConfigSources sources{tmp.str("c.json"), {}, {}};
  sources.world_size = 2;
  auto rc = resolve_config(sources, registry);
  BOOST_TEST(rc.parallel.record->name == "ddp");
  BOOST_TEST(mentions(rc.parallel_chosen, "parallel: ddp (the run has 2 processes"));
  sources.world_size = 1;
  rc = resolve_config(sources, registry);
  BOOST_TEST(rc.parallel.record->name == "none");
  BOOST_TEST(rc.parallel_chosen.empty());
  sources.world_size = 2;
  sources.sets = {"parallel.plugin=none"};
  rc = resolve_config(sources, registry);
  BOOST_TEST(rc.parallel.record->name == "none");
}

BOOST_AUTO_TEST_CASE(unknown_plugin_option_names_plugin_and_key) {
  auto cfg = test::synthetic_config();
  cfg["model"]["hiden"] = {8};
  auto err = error_of(cfg);
  BOOST_TEST(mentions(err, "model.hiden: unknown key"), err);
  BOOST_TEST(mentions(err, "did you mean 'hidden'"), err);
}

BOOST_AUTO_TEST_CASE(wrong_types_name_the_expected_type) {
  auto cfg = test::synthetic_config();
  cfg["batch_size"] = "32";
  BOOST_TEST(mentions(error_of(cfg), "batch_size: expected int"));
  cfg = test::synthetic_config();
  cfg["model"]["hidden"] = "wide";
  BOOST_TEST(mentions(error_of(cfg), "model.hidden: expected int list"));
  cfg = test::synthetic_config();
  cfg["optimizer"]["lr"] = "fast";
  BOOST_TEST(mentions(error_of(cfg), "optimizer.lr: expected number"));
  // Past INT64_MAX an int would wrap negative when read: a type error instead.
  for (const char* key : {"batch_size", "seed"}) {
    cfg = test::synthetic_config();
    cfg[key] = std::numeric_limits<std::uint64_t>::max();
    auto err = error_of(cfg);
    BOOST_TEST(mentions(err, std::string(key) + ": expected int (64-bit), got 18446744073709551615"), err);
  }
  cfg = test::synthetic_config();
  cfg["model"]["hidden"] = {8, std::numeric_limits<std::uint64_t>::max()};
  BOOST_TEST(mentions(error_of(cfg), "model.hidden: expected int list"));
  cfg = test::synthetic_config();
  cfg["seed"] = std::numeric_limits<std::int64_t>::max();  // the largest int64 is still fine
  BOOST_TEST(error_of(cfg).empty(), error_of(cfg));
}

BOOST_AUTO_TEST_CASE(bad_values_are_refused) {
  auto cfg = test::synthetic_config();
  cfg["batch_size"] = 0;
  BOOST_TEST(mentions(error_of(cfg), "batch_size: must be positive"));
  cfg = test::synthetic_config();
  cfg["valid_split"] = 1.5;
  BOOST_TEST(mentions(error_of(cfg), "valid_split: must be in [0, 1)"));
  cfg = test::synthetic_config();
  cfg["optimizer"]["name"] = "adamm";
  BOOST_TEST(mentions(error_of(cfg), "did you mean 'adam'"));
  // Old configs name the optimizer with "name"; "plugin" is its spelling now.
  cfg = test::synthetic_config();
  cfg["optimizer"]["plugin"] = "sgd";
  BOOST_TEST(mentions(error_of(cfg), "\"name\" is its old spelling"));
}

// Every limit the keys' table declares is checked, in one line naming the
// key, in the words of a plugin option's limits.
BOOST_AUTO_TEST_CASE(the_limits_of_the_keys_table_are_checked) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"max_epochs=0", "max_epochs: must be positive, got 0"},
      {"accumulate_steps=-1", "accumulate_steps: must be positive, got -1"},
      {"data_workers=65", "data_workers: must be in [0, 64], got 65"},
      {"seed=-1", "seed: must be at least 0, got -1"},
      {"precision=fp8", "precision: must be 32, bf16-mixed or 16-mixed, got 'fp8'"}};
  for (const auto& [set, message] : cases) {
    const std::string error = error_of(test::synthetic_config(), {}, {set});
    BOOST_TEST(mentions(error, message), set << ": " << error);
  }
}

// What a resume may change is the table's resume flag; the run settings
// plugins read (TrainContext::settings) take the table's defaults.
BOOST_AUTO_TEST_CASE(resume_flags_and_run_settings_come_from_the_table) {
  BOOST_TEST(skein::core::keys_changeable_on_resume() ==
                 (std::vector<std::string>{"history", "parallel", "callbacks", "max_epochs", "device", "data_workers",
                                           "checkpoint_background", "plugin_versions"}),
             boost::test_tools::per_element());
  const skein::RunSettings defaults = skein::core::run_settings_of(nlohmann::json::object());
  BOOST_TEST(defaults.max_epochs == 10);
  BOOST_TEST(defaults.batch_size == 64);
  BOOST_TEST(defaults.accumulate_steps == 1);
  const skein::RunSettings given = skein::core::run_settings_of({{"max_epochs", 3}, {"accumulate_steps", nullptr}});
  BOOST_TEST(given.max_epochs == 3);
  BOOST_TEST(given.accumulate_steps == 1);
  nlohmann::json config = nlohmann::json::object();
  skein::core::put_run_settings(config, given);
  BOOST_TEST(config == (nlohmann::json{{"max_epochs", 3}, {"batch_size", 64}, {"accumulate_steps", 1}}));
}

BOOST_AUTO_TEST_CASE(missing_sections_and_plugins_are_named) {
  auto cfg = test::synthetic_config();
  cfg.erase("model");
  BOOST_TEST(mentions(error_of(cfg), "model: required option is missing"));
  cfg = test::synthetic_config();
  cfg["model"]["plugin"] = "mpl";
  auto err = error_of(cfg);
  BOOST_TEST(mentions(err, "unknown plugin 'mpl'"), err);
  BOOST_TEST(mentions(err, "did you mean 'mlp'"), err);
  cfg = test::synthetic_config();
  cfg["model"]["plugin"] = "synthetic";
  BOOST_TEST(mentions(error_of(cfg), "'synthetic' is a dataset plugin, not a model plugin"));
}

BOOST_AUTO_TEST_CASE(malformed_json_reports_line_and_column) {
  test::write_text(tmp.str("bad.json"), "{\n  \"batch_size\": 3,\n  oops\n}");
  try {
    skein::core::read_config_file(tmp.str("bad.json"));
    BOOST_FAIL("expected an error");
  } catch (const ConfigError& e) {
    std::string err = e.what();
    BOOST_TEST(mentions(err, "bad.json"), err);
    BOOST_TEST(mentions(err, "line 3"), err);
  }
}

BOOST_AUTO_TEST_CASE(set_overrides_nested_values_and_list_entries) {
  auto cfg = test::synthetic_config();
  cfg["callbacks"] = {{{"plugin", "print_log"}}};
  test::write_text(tmp.str("c.json"), cfg.dump());
  auto rc = resolve_config(
      ConfigSources{tmp.str("c.json"),
                    {},
                    {"max_epochs=2", "model.hidden=[8,4]", R"(optimizer={"name": "adam", "lr": 0.01})",
                     "callbacks.0.precision=2"}},
      registry);
  BOOST_TEST(rc.max_epochs == 2);
  BOOST_TEST(rc.model.options["hidden"] == nlohmann::json({8, 4}));
  BOOST_TEST(rc.optimizer.record->name == "adam");
  BOOST_TEST(rc.resolved["optimizer"]["plugin"].get<std::string>() == "adam");
  BOOST_TEST(!rc.resolved["optimizer"].contains("name"));
  BOOST_TEST(rc.callbacks.at(0).options["precision"].get<int>() == 2);
  BOOST_TEST(rc.optimizer.options["betas"] == nlohmann::json({0.9, 0.999}));
  BOOST_TEST(mentions(error_of(cfg, {}, {"callbacks.3.precision=2"}), "out of range"));
  // Options of one optimizer are refused by another.
  BOOST_TEST(mentions(error_of(cfg, {}, {"optimizer.name=adam"}), "optimizer.momentum: unknown key"));
  BOOST_TEST(mentions(error_of(cfg, {}, {"nonsense"}), "expected dotted.key=VALUE"));
}

BOOST_AUTO_TEST_CASE(plugin_flags_fill_slots_and_append_callbacks) {
  test::write_text(tmp.str("c.json"), test::synthetic_config().dump());
  auto rc = resolve_config(
      ConfigSources{tmp.str("c.json"),
                    {"cnn:channels=[4,8],hidden=16", "probe_callback:stop_at=2"},
                    {"data.shape=[1,8,8]"}},
      registry);
  BOOST_TEST(rc.model.record->name == "cnn");
  BOOST_TEST(rc.model.options["channels"] == nlohmann::json({4, 8}));
  BOOST_TEST(rc.model.options["hidden"].get<int>() == 16);
  BOOST_REQUIRE(rc.callbacks.size() == 1u);
  BOOST_TEST(rc.callbacks[0].options["stop_at"].get<int>() == 2);
}

BOOST_AUTO_TEST_CASE(two_plugins_for_one_slot_is_an_error_naming_both) {
  auto err = error_of(test::synthetic_config(), {"mlp", "cnn"});
  BOOST_TEST(mentions(err, "'mlp' and 'cnn'"), err);
  err = error_of(test::synthetic_config(), {"mlp:bogus=1"});
  BOOST_TEST(mentions(err, "model.bogus: unknown key"), err);
}

BOOST_AUTO_TEST_CASE(plugin_errors_in_constructors_name_the_plugin) {
  auto cfg = test::synthetic_config();
  cfg["model"] = {{"plugin", "cnn"}};
  test::write_text(tmp.str("c.json"), cfg.dump());
  auto rc = resolve_config(ConfigSources{tmp.str("c.json"), {}, {}}, registry);
  skein::RunInfo run;
  skein::DataInfo info{{16}, 4};  // not an image: cnn refuses it
  auto opts = rc.model.make_options();
  try {
    registry.create<skein::Model>(*rc.model.record, skein::PluginArgs{opts, run, &info});
    BOOST_FAIL("expected an error");
  } catch (const ConfigError& e) {
    BOOST_TEST(mentions(e.what(), "plugin 'cnn'"), e.what());
    BOOST_TEST(mentions(e.what(), "option 'channels' needs image inputs"), e.what());
  }
}

// A value outside an option's declared limits (API 3.1) is refused with the
// config, before any plugin is made, naming the file, the plugin and the option.
BOOST_AUTO_TEST_CASE(values_outside_declared_limits_are_refused_with_the_config) {
  auto cfg = test::synthetic_config();
  cfg["model"]["dropout"] = 2.0;
  auto err = error_of(cfg);
  BOOST_TEST(mentions(err, "model (plugin 'mlp'): option 'dropout' must be in [0, 1), got 2.0"), err);
  cfg["model"]["dropout"] = 0.5;
  cfg["model"]["activation"] = "swish";
  err = error_of(cfg);
  BOOST_TEST(mentions(err, "option 'activation' must be relu, gelu, tanh, sigmoid, leaky_relu or elu, got 'swish'"),
             err);
  cfg["model"]["activation"] = "gelu";  // a listed choice
  test::write_text(tmp.str("c.json"), cfg.dump());
  BOOST_TEST(resolve_config(ConfigSources{tmp.str("c.json"), {}, {}}, registry).model.options["activation"] == "gelu");
}

BOOST_AUTO_TEST_CASE(a_plugin_flag_for_the_configs_own_slot_plugin_updates_its_options) {
  auto cfg = test::synthetic_config();
  cfg["model"] = {{"plugin", "mlp"}, {"hidden", {8}}, {"dropout", 0.25}};
  test::write_text(tmp.str("c.json"), cfg.dump());
  // Same plugin by name: the config's other options stay.
  auto rc = resolve_config(ConfigSources{tmp.str("c.json"), {"mlp:activation=gelu"}, {}}, registry);
  BOOST_TEST(rc.model.options["dropout"].get<double>() == 0.25);
  BOOST_TEST(rc.model.options["activation"].get<std::string>() == "gelu");
  BOOST_TEST(rc.model.options["hidden"][0].get<int>() == 8);
  // Same plugin by file.
  rc = resolve_config(ConfigSources{tmp.str("c.json"), {std::string(SKEIN_PLUGIN_DIR) + "/libskein_model_mlp.so:hidden=[4]"}, {}},
                      registry);
  BOOST_TEST(rc.model.options["dropout"].get<double>() == 0.25);
  BOOST_TEST(rc.model.options["hidden"][0].get<int>() == 4);
  // Another plugin replaces the slot (its defaults, not the mlp's options).
  rc = resolve_config(ConfigSources{tmp.str("c.json"), {"probe_model"}, {}}, registry);
  BOOST_TEST(rc.model.record->name == "probe_model");
  BOOST_TEST(!rc.model.options.contains("dropout"));
}

BOOST_AUTO_TEST_CASE(a_set_inside_a_default_slot_refines_the_default_plugin) {
  auto cfg = test::synthetic_config();
  cfg.erase("optimizer");
  test::write_text(tmp.str("c.json"), cfg.dump());
  auto rc = resolve_config(ConfigSources{tmp.str("c.json"), {}, {"optimizer.lr=0.5"}}, registry);
  BOOST_TEST(rc.optimizer.record->name == "sgd");
  BOOST_TEST(rc.optimizer.options["lr"].get<double>() == 0.5);
}

// --set SLOT.plugin=OTHER drops the options of the plugin it replaces (the
// mlp's int_list "hidden" is no option of cnn's type), keeping earlier --set
// flags for the slot; naming the same plugin keeps the config's options.
BOOST_AUTO_TEST_CASE(a_set_that_switches_the_plugin_starts_the_slot_afresh) {
  test::write_text(tmp.str("c.json"), test::synthetic_config().dump());
  auto rc = resolve_config(ConfigSources{tmp.str("c.json"), {}, {"model.dropout=0.5", "model.plugin=cnn"}}, registry);
  BOOST_TEST(rc.model.record->name == "cnn");
  BOOST_TEST(rc.model.options["hidden"].get<int>() == 128);
  BOOST_TEST(rc.model.options["dropout"].get<double>() == 0.5);
  rc = resolve_config(ConfigSources{tmp.str("c.json"), {}, {"model.plugin=\"mlp\""}}, registry);
  BOOST_TEST(rc.model.options["hidden"][0].get<int>() == 32);
  auto cfg = test::synthetic_config();
  cfg["callbacks"] = {{{"plugin", "early_stopping"}, {"patience", 2}}};
  test::write_text(tmp.str("c.json"), cfg.dump());
  rc = resolve_config(ConfigSources{tmp.str("c.json"), {}, {"callbacks.0.plugin=timer"}}, registry);
  BOOST_TEST(rc.callbacks.at(0).record->name == "timer");
}

BOOST_AUTO_TEST_SUITE_END()

