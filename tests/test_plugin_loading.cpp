#define BOOST_TEST_MODULE plugin_loading
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "skein/callback.hpp"
#include "skein/host/option_schema.hpp"
#include "skein/host/plugin_registry.hpp"
#include "skein/errors.hpp"
#include "skein/model.hpp"
#include "skein/detail/option_default.hpp"
#include "skein/detail/version.hpp"
#include "test_support.hpp"

using skein::PluginError;
using skein::PluginKind;
using skein::core::PluginRegistry;

namespace {

using test::contains;
std::string problem_for(const PluginRegistry& reg, const std::string& file) {
  for (const auto& p : reg.problems())
    if (contains(p.path, file)) return p.message;
  return "";
}

std::string load_error(const std::string& file) {
  PluginRegistry reg;
  return test::message_of<PluginError>([&] { reg.load_file(std::string(BROKEN_PLUGIN_DIR) + "/" + file); });
}

// A copy of a working plugin (callback 'twin') at `path`.
void copy_plugin(const std::string& path) {
  boost::filesystem::copy_file(std::string(TWIN_PLUGIN_DIR_A) + "/libtest_twin_a.so", path);
}

// Sets an environment variable for the life of the object.
struct ScopedEnv {
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  const char* name_;
};

std::string require_error(const PluginRegistry& reg, const std::string& name) {
  return test::message_of<PluginError>([&] { reg.require(name); });
}

}  // namespace

BOOST_AUTO_TEST_CASE(bundled_plugins_are_discovered_with_their_metadata) {
  PluginRegistry reg;
  reg.scan_directory(SKEIN_PLUGIN_DIR);
  BOOST_TEST(reg.problems().empty());
  const std::vector<std::pair<std::string, PluginKind>> expected = {
      {"local", PluginKind::history},  {"none", PluginKind::parallel},
      {"mlp", PluginKind::model},      {"cnn", PluginKind::model},
      {"idx", PluginKind::dataset},    {"synthetic", PluginKind::dataset},
      {"print_log", PluginKind::callback}};
  for (const auto& [name, kind] : expected) {
    const auto* rec = reg.find(name);
    BOOST_REQUIRE_MESSAGE(rec, "plugin " << name << " not found");
    BOOST_TEST((rec->kind == kind), name);
    BOOST_TEST(!rec->version.empty());
    BOOST_TEST(!rec->description.empty());
  }
  const auto& mlp = reg.require("mlp");
  BOOST_REQUIRE(!mlp.options.empty());
  BOOST_TEST(std::string(mlp.options[0].name) == "hidden");
  BOOST_TEST(std::string(mlp.options[0].default_json) == "[256, 128]");
  // The limits come with the manifest (API 3.1).
  BOOST_TEST(std::string(mlp.options[0].range) == "(0, )");
  BOOST_TEST((mlp.options[1].type == skein::OptionType::choice));
  BOOST_TEST(std::string(mlp.options[1].choices) == "relu|gelu|tanh|sigmoid|leaky_relu|elu");
  BOOST_TEST(!mlp.options[1].range);
}

// An unknown name says where plugins were looked for (a directory that is
// not there marked so) and how to add one, on one line.
BOOST_AUTO_TEST_CASE(an_unknown_plugin_names_the_directories_searched_and_how_to_add_one) {
  PluginRegistry reg;
  reg.scan_directory(SKEIN_PLUGIN_DIR);
  reg.scan_directory("/no/such/plugin/dir");
  const std::string err = test::message_of<skein::ConfigError>([&] { reg.require("csv_logger"); });
  BOOST_TEST(contains(err, "unknown plugin 'csv_logger'"), err);
  BOOST_TEST(contains(err, "; looked in " + std::string(SKEIN_PLUGIN_DIR) + ", /no/such/plugin/dir (missing); "), err);
  BOOST_TEST(contains(err, "add a directory with --plugin-dir DIR or SKEIN_PLUGIN_PATH=DIR"), err);
  BOOST_TEST(!contains(err, "\n"), err);
}

BOOST_AUTO_TEST_CASE(broken_files_are_reported_not_fatal) {
  PluginRegistry reg;
  reg.scan_directory(BROKEN_PLUGIN_DIR);
  BOOST_TEST(reg.plugins().size() == 1u);  // no_entry: its manifest is fine, it fails when used
  BOOST_TEST(contains(problem_for(reg, "libtest_not_a_plugin.so"), "is not a Skein plugin"));
  BOOST_TEST(contains(problem_for(reg, "libtext_file.so"), "has no .skein_manifest section"));
  BOOST_TEST(contains(problem_for(reg, "libtest_wrong_api.so"), "got 4." SKEIN_STR(SKEIN_API_MINOR) ", host supports " SKEIN_HOST_API));
  BOOST_TEST(contains(problem_for(reg, "libtest_newer_minor.so"), "got 3.99, host supports " SKEIN_HOST_API));
  const auto foreign = problem_for(reg, "libtest_wrong_fingerprint.so");
  BOOST_TEST(contains(foreign, "torch=9.9"), foreign);
  BOOST_TEST(contains(foreign, "was built against libtorch 9.9, this skein against libtorch " +
                                   std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR)),
             foreign);
  skein::RunInfo run;
  skein::Options opts("callbacks[0] (plugin 'no_entry')", nlohmann::json::object());
  auto err = test::message_of<PluginError>(
      [&] { reg.create<skein::Callback>(reg.require("no_entry"), skein::PluginArgs{opts, run, nullptr}); });
  BOOST_TEST(contains(err, "has no entry point"), err);
}

BOOST_AUTO_TEST_CASE(explicitly_named_broken_files_are_errors_naming_the_file) {
  auto err = load_error("libtest_wrong_api.so");
  BOOST_TEST(contains(err, "Wrong API version on plugin"), err);
  BOOST_TEST(contains(err, "libtest_wrong_api.so"), err);
  BOOST_TEST(contains(load_error("libtest_not_a_plugin.so"), "not a Skein plugin"));
  BOOST_TEST(contains(load_error("libtext_file.so"), "libtext_file.so"));
}

BOOST_AUTO_TEST_CASE(duplicate_names_are_an_error_naming_both_files) {
  PluginRegistry reg;
  reg.scan_directory(TWIN_PLUGIN_DIR_A);
  reg.scan_directory(TWIN_PLUGIN_DIR_B);
  BOOST_TEST(contains(problem_for(reg, "libtest_twin_b.so"), "duplicate plugin name 'twin'"));
  try {
    reg.require("twin");
    BOOST_FAIL("expected an error");
  } catch (const PluginError& e) {
    BOOST_TEST(contains(e.what(), "libtest_twin_a.so"), e.what());
    BOOST_TEST(contains(e.what(), "libtest_twin_b.so"), e.what());
  }
  // Naming one file explicitly settles it.
  const auto& rec = reg.load_file(std::string(TWIN_PLUGIN_DIR_B) + "/libtest_twin_b.so");
  BOOST_TEST(contains(reg.require("twin").path, "twin_b"));
  BOOST_TEST(rec.name == "twin");
}

BOOST_AUTO_TEST_CASE(objects_outlive_the_registry_and_libraries_stay_loaded) {
  std::shared_ptr<skein::Callback> callback;
  std::shared_ptr<skein::Model> model;
  skein::RunInfo run;
  skein::DataInfo info{{4}, 3};
  {
    PluginRegistry reg;
    test::load_test_plugins(reg);
    const auto& cb = reg.require("probe_callback");
    skein::Options cb_opts("probe", skein::core::validate_options(cb.options, nlohmann::json::object(), "cb", "cb"));
    callback = reg.create<skein::Callback>(reg.require("probe_callback"),
                                           skein::PluginArgs{cb_opts, run, nullptr});
    const auto& pm = reg.require("probe_model");
    skein::Options m_opts("probe_model", skein::core::validate_options(pm.options, {{"tag", "x"}}, "m", "m"));
    model = reg.create<skein::Model>(pm, skein::PluginArgs{m_opts, run, &info});
  }  // registry gone
  auto out = model->forward(torch::ones({2, 4}));
  BOOST_TEST(out.size(1) == 3);
  BOOST_TEST(callback->state().is_null());
  callback.reset();  // destroyed after the registry
  // A second registry over the same files in the other order, destroyed first.
  auto reg2 = std::make_unique<PluginRegistry>();
  reg2->scan_directory(TEST_PLUGIN_DIR);
  reg2->scan_directory(SKEIN_PLUGIN_DIR);
  const auto& pm = reg2->require("probe_model");
  skein::Options m_opts("probe_model", skein::core::validate_options(pm.options, {{"tag", "y"}}, "m", "m"));
  auto model2 = reg2->create<skein::Model>(pm, skein::PluginArgs{m_opts, run, &info});
  reg2.reset();
  model.reset();
  BOOST_TEST(model2->forward(torch::ones({1, 4})).size(0) == 1);
}

// EngineRun and sessions make every rank's plugins on its own thread, all at
// once: a plugin's library is opened once and every thread gets a working
// object (before the registry locked its lazy load, threads raced on the
// record and on the list of libraries kept loaded; issue 48's crash).
BOOST_AUTO_TEST_CASE(threads_creating_the_same_plugin_at_once_open_its_library_once) {
  constexpr int kThreads = 8;
  skein::RunInfo run;
  skein::DataInfo info{{4}, 3};
  for (int round = 0; round < 20; ++round) {
    PluginRegistry reg;
    test::load_test_plugins(reg);
    const auto& pm = reg.require("probe_model");
    skein::Options options("probe_model", skein::core::validate_options(pm.options, {{"tag", "x"}}, "m", "m"));
    std::atomic<int> ready{0};
    std::vector<std::shared_ptr<skein::Model>> models(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < kThreads) std::this_thread::yield();  // all start creating together
        models[static_cast<std::size_t>(t)] = reg.create<skein::Model>(pm, skein::PluginArgs{options, run, &info});
      });
    for (auto& t : threads) t.join();
    BOOST_TEST_REQUIRE(reg.libraries_opened() == 1u, "round " << round);
    for (const auto& m : models) BOOST_TEST(m->forward(torch::ones({2, 4})).size(1) == 3);
  }
}

BOOST_AUTO_TEST_CASE(a_world_writable_plugin_directory_is_refused) {
  test::TempDir dir;
  boost::filesystem::copy_file(std::string(TWIN_PLUGIN_DIR_A) + "/libtest_twin_a.so", dir.str("libtwin.so"));
  ::chmod(dir.str().c_str(), 0777);
  PluginRegistry reg;
  reg.scan_directory(dir.str());
  BOOST_TEST(reg.find("twin") == nullptr);
  BOOST_TEST(contains(problem_for(reg, dir.str()), "world-writable"));
  ::setenv("SKEIN_ALLOW_UNSAFE_PLUGIN_DIR", "1", 1);
  PluginRegistry allowed;
  allowed.scan_directory(dir.str());
  ::unsetenv("SKEIN_ALLOW_UNSAFE_PLUGIN_DIR");
  BOOST_TEST(allowed.find("twin") != nullptr);
}

BOOST_AUTO_TEST_CASE(creating_a_plugin_as_the_wrong_kind_is_refused) {
  PluginRegistry reg;
  test::load_test_plugins(reg);
  skein::RunInfo run;
  skein::Options opts("x", nlohmann::json::object());
  BOOST_CHECK_THROW(reg.create<skein::Callback>(reg.require("mlp"), skein::PluginArgs{opts, run, nullptr}),
                    skein::ConfigError);
}

BOOST_AUTO_TEST_CASE(a_group_writable_plugin_file_is_refused_and_the_reason_given_by_name) {
  test::TempDir dir;
  const std::string file = dir.str("libtwin.so");
  copy_plugin(file);
  ::chmod(file.c_str(), 0664);
  PluginRegistry reg;
  reg.scan_directory(dir.str());
  BOOST_TEST(reg.find("twin") == nullptr);
  BOOST_TEST(contains(problem_for(reg, file), "file '" + file + "' is group-writable"), problem_for(reg, file));
  // Asked for by name, the error says why instead of "unknown plugin".
  const auto by_name = require_error(reg, "twin");
  BOOST_TEST(contains(by_name, "plugin 'twin' (" + file + ") cannot be used: refused plugin file"), by_name);
  BOOST_TEST(contains(by_name, "group-writable"), by_name);
  PluginRegistry direct;
  const auto by_path = test::message_of<PluginError>([&] { direct.load_file(file); });
  BOOST_TEST(contains(by_path, "refused plugin file '" + file + "'"), by_path);
  BOOST_TEST(contains(by_path, "group-writable"), by_path);
}

BOOST_AUTO_TEST_CASE(a_world_writable_directory_above_the_plugin_is_refused_unless_sticky) {
  test::TempDir dir;
  boost::filesystem::create_directories(dir.str("open/inner"));
  const std::string file = dir.str("open/inner/libtwin.so");
  copy_plugin(file);
  ::chmod(dir.str("open").c_str(), 0777);
  PluginRegistry reg;
  reg.scan_directory(dir.str("open/inner"));
  BOOST_TEST(reg.find("twin") == nullptr);
  const std::string why = "directory '" + dir.str("open") + "' is world-writable";
  BOOST_TEST(contains(problem_for(reg, dir.str("open/inner")), why), problem_for(reg, dir.str("open/inner")));
  BOOST_TEST(contains(require_error(reg, "twin"), why), require_error(reg, "twin"));
  PluginRegistry direct;
  BOOST_TEST(contains(test::message_of<PluginError>([&] { direct.load_file(file); }), why));
  // Others cannot replace what they do not own in a sticky directory, as in /tmp.
  ::chmod(dir.str("open").c_str(), 01777);
  PluginRegistry sticky;
  sticky.scan_directory(dir.str("open/inner"));
  BOOST_TEST(sticky.find("twin") != nullptr);
}

BOOST_AUTO_TEST_CASE(a_symlink_to_a_plugin_in_an_unsafe_directory_is_refused) {
  test::TempDir dir;
  boost::filesystem::create_directories(dir.str("open"));
  boost::filesystem::create_directories(dir.str("safe"));
  copy_plugin(dir.str("open/libtwin.so"));
  ::chmod(dir.str("open").c_str(), 0777);
  boost::filesystem::create_symlink(dir.str("open/libtwin.so"), dir.str("safe/libtwin.so"));
  PluginRegistry reg;
  reg.scan_directory(dir.str("safe"));
  BOOST_TEST(reg.find("twin") == nullptr);
  const std::string problem = problem_for(reg, dir.str("safe/libtwin.so"));
  BOOST_TEST(contains(problem, "is '" + dir.str("open/libtwin.so") + "'"), problem);
  BOOST_TEST(contains(problem, "directory '" + dir.str("open") + "' is world-writable"), problem);
  PluginRegistry direct;
  const auto err = test::message_of<PluginError>([&] { direct.load_file(dir.str("safe/libtwin.so")); });
  BOOST_TEST(contains(err, "world-writable"), err);
}

BOOST_AUTO_TEST_CASE(the_opt_out_allows_unsafe_files_but_never_a_missing_manifest) {
  test::TempDir dir;
  boost::filesystem::create_directories(dir.str("open"));
  copy_plugin(dir.str("open/libtwin.so"));
  ::chmod(dir.str("open/libtwin.so").c_str(), 0666);
  ::chmod(dir.str("open").c_str(), 0777);
  boost::filesystem::copy_file(std::string(BROKEN_PLUGIN_DIR) + "/libtest_no_manifest.so", dir.str("open/libnm.so"));
  const std::string marker = dir.str("loaded");
  ScopedEnv load_marker("SKEIN_TEST_LOAD_MARKER", marker);
  ScopedEnv allow("SKEIN_ALLOW_UNSAFE_PLUGIN_DIR", "1");
  PluginRegistry reg;
  reg.scan_directory(dir.str("open"));
  BOOST_TEST(reg.find("twin") != nullptr);
  BOOST_TEST(contains(problem_for(reg, "libnm.so"), "has no .skein_manifest section"));
  BOOST_TEST(contains(require_error(reg, "nm"), "has no .skein_manifest section"), require_error(reg, "nm"));
  BOOST_TEST(!boost::filesystem::exists(marker), "the manifest-less library was loaded");
}

BOOST_AUTO_TEST_CASE(a_library_without_a_manifest_is_never_loaded) {
  test::TempDir dir;
  const std::string marker = dir.str("loaded");
  ScopedEnv load_marker("SKEIN_TEST_LOAD_MARKER", marker);
  const std::string file = std::string(BROKEN_PLUGIN_DIR) + "/libtest_no_manifest.so";
  PluginRegistry reg;
  reg.scan_directory(BROKEN_PLUGIN_DIR);
  BOOST_TEST(contains(problem_for(reg, "libtest_no_manifest.so"), "has no .skein_manifest section"));
  BOOST_TEST(contains(require_error(reg, "test_no_manifest"), "not loaded"), require_error(reg, "test_no_manifest"));
  BOOST_TEST(!boost::filesystem::exists(marker), "scanning loaded the manifest-less library");
  PluginRegistry direct;
  const auto err = test::message_of<PluginError>([&] { direct.load_file(file); });
  BOOST_TEST(contains(err, "'" + file + "' is not a Skein plugin: it has no .skein_manifest section"), err);
  BOOST_TEST(!boost::filesystem::exists(marker), "naming the manifest-less library loaded it");
}

// CMake's list of kinds (skein_add_plugin's KIND) is read from the table in
// skein/plugin.hpp: it must be the compiler's, in the same order.
BOOST_AUTO_TEST_CASE(cmake_reads_the_plugin_kinds_of_the_header) {
  std::string kinds;
  for (auto kind : skein::kAllPluginKinds) kinds += (kinds.empty() ? "" : " ") + std::string(skein::to_string(kind));
  BOOST_TEST(kinds == SKEIN_CMAKE_PLUGIN_KINDS);
}

// SKEIN_OPTION defaults are checked while the plugin compiles (the checker is
// constexpr; the compile-time half is plugin_with_a_bad_default_does_not_compile).
BOOST_AUTO_TEST_CASE(option_defaults_must_be_json_of_their_type) {
  using skein::OptionType;
  using skein::option_default::fits;
  static_assert(fits(OptionType::integer, "-3") && !fits(OptionType::integer, "0.5"));
  const std::vector<std::tuple<OptionType, const char*, bool>> cases = {
      {OptionType::boolean, "true", true},          {OptionType::boolean, "1", false},
      {OptionType::integer, "42", true},            {OptionType::integer, "1e3", false},
      {OptionType::integer, "07", false},           {OptionType::number, "1e-8", true},
      {OptionType::number, "-0.25", true},          {OptionType::number, ".5", false},
      {OptionType::string, "\"a \\\"b\\\" \\u00e9\"", true},
      {OptionType::string, "auto", false},          {OptionType::string, "\"open", false},
      {OptionType::int_list, "[256, 128]", true},   {OptionType::int_list, "[1, 2.5]", false},
      {OptionType::number_list, "[1, 2.5]", true},  {OptionType::number_list, "[]", true},
      {OptionType::string_list, "[\"a\", 1]", false},
      {OptionType::object, "{\"k\": [1, {\"x\": null}]}", true},
      {OptionType::object, "{\"k\": 1,}", false},   {OptionType::list, "[{}, [], \"x\"]", true},
      {OptionType::list, "[1] 2", false},           {OptionType::integer, "null", true},
      {OptionType::string, " \"padded\" ", true},   {OptionType::boolean, "", false}};
  for (const auto& [type, json, expected] : cases)
    BOOST_TEST(fits(type, json) == expected, skein::to_string(type) << " <- " << json);
  constexpr skein::OptionSpec specs[] = {{"a", OptionType::integer, "1", ""},
                                         {"b", OptionType::string, nullptr, ""},
                                         {"c", OptionType::boolean, "\"yes\"", ""},
                                         {nullptr, OptionType::object, nullptr, nullptr}};
  static_assert(skein::option_default::first_bad_default(specs) == 2);
}
