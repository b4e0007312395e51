#define BOOST_TEST_MODULE sdk_install
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <boost/algorithm/string/join.hpp>

#include "test_support.hpp"

// A third party's view: install Skein, build examples/third-party-plugin
// against the install tree (not the build tree), and train with its plugins.

namespace {

using test::contains;
namespace fs = boost::filesystem;

// A command's prefix that runs it where no CUDA toolkit can be found, as on a
// fresh machine (tests/tools/without_cuda_toolkit.sh): a CUDA build of
// libtorch (PyPI's wheel) needs none to build against.
const std::string kWithoutCudaToolkit = SKEIN_SOURCE_DIR "/tests/tools/without_cuda_toolkit.sh ";

struct Installed {
  Installed() {
    auto r = test::run(std::string(CMAKE_COMMAND) + " --install " SKEIN_BUILD_DIR " --prefix " + prefix(), 300);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const std::string example = SKEIN_SOURCE_DIR "/examples/third-party-plugin";
    r = test::run(kWithoutCudaToolkit + CMAKE_COMMAND + " -S " + example + " -B " + build() +
                      " -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=" + prefix() +
                      " -DCMAKE_CXX_COMPILER_LAUNCHER=" + ccache(),
                  300);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.out + r.err);
    r = test::run(kWithoutCudaToolkit + CMAKE_COMMAND + " --build " + build() + " -j 2", 600);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.out + r.err);
    auto cfg = test::synthetic_config();
    cfg["model"] = {{"plugin", "residual_mlp"}, {"width", 16}};
    cfg["max_epochs"] = 6;
    test::write_text(tmp.str("cfg.json"), cfg.dump());
  }
  static std::string ccache() {
    return test::run("command -v ccache").exit_code == 0 ? "ccache" : "";
  }
  std::string prefix() const { return tmp.str("prefix"); }
  std::string build() const { return tmp.str("example-build"); }
  std::string skein() const { return prefix() + "/bin/skein"; }
  test::TempDir tmp;
};

bool is_elf(const fs::path& file) {
  char magic[4] = {};
  std::ifstream(file.string(), std::ios::binary).read(magic, sizeof magic);
  return std::string(magic, sizeof magic) == "\x7f" "ELF";
}

// The RPATH and RUNPATH entries of the ELF files under `root` that do not
// exist (with $ORIGIN expanded) or name a Windows or CUDA-toolkit directory
// (what a libtorch's CMake targets may carry), as "file: entry".
std::vector<std::string> bad_rpath_entries(const std::string& root) {
  const std::regex foreign("_win|win-x64|/cuda([-/.0-9]|$)");
  std::vector<std::string> bad;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (fs::is_symlink(e.path()) || !fs::is_regular_file(e.path()) || !is_elf(e.path())) continue;
    const auto dynamic = test::run("readelf -d " + e.path().string());
    BOOST_REQUIRE_MESSAGE(dynamic.exit_code == 0, dynamic.err);
    std::istringstream lines(dynamic.out);
    for (std::string line; std::getline(lines, line);) {
      if (!contains(line, "(RPATH)") && !contains(line, "(RUNPATH)")) continue;
      const auto open = line.find('['), close = line.rfind(']');
      std::istringstream entries(line.substr(open + 1, close - open - 1));
      for (std::string entry; std::getline(entries, entry, ':');) {
        std::string dir = entry;
        if (dir.rfind("$ORIGIN", 0) == 0) dir = e.path().parent_path().string() + dir.substr(7);
        if (entry.empty() || !fs::is_directory(dir) || std::regex_search(entry, foreign))
          bad.push_back(e.path().string() + ": '" + entry + "'");
      }
    }
  }
  return bad;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(sdk_install, Installed)

// One case: installing and building the example is the expensive part.
BOOST_AUTO_TEST_CASE(third_party_plugins_build_against_the_install_and_train) {
  for (const char* p : {"bin/skein", "lib/libskein_sdk.so", "lib/libskein_base.so", "lib/libskein_host.so",
                        "lib/libskein_core.so", "lib/libskein_commands.so", "lib/libskein_kit.so",
                        "lib/libskein_io.so", "include/skein/io/npy.hpp", "include/skein/kit/kit_version.hpp",
                        "lib/libskein_testing.so", "include/skein/testing.hpp",
                        "lib/skein/plugins/libskein_model_mlp.so", "include/skein/plugin.hpp",
                        "lib/cmake/Skein/SkeinConfig.cmake", "lib/cmake/Skein/SkeinPlugin.cmake",
                        "lib/libskein_session.so", "lib/libskein_c.so", "include/skein/session.hpp",
                        "include/skein/skein.h", "share/skein/fortran/skein.f90"})
    BOOST_TEST(fs::exists(prefix() + "/" + p), p);

  // The contract is the top level of include/skein, but for the embedding
  // libraries' three headers: at most 14.
  int contract_headers = 0;
  for (const auto& e : fs::directory_iterator(prefix() + "/include/skein")) {
    const std::string name = e.path().filename().string();
    if (fs::is_regular_file(e.path()) && name != "session.hpp" && name != "skein.h" && name != "testing.hpp")
      ++contract_headers;
  }
  BOOST_TEST(contract_headers <= 14);

  // The example plugin's own test, on the installed harness, passes.
  auto tested = test::run(std::string(CTEST_COMMAND) + " --test-dir " + build() + " --output-on-failure", 300);
  BOOST_TEST(tested.exit_code == 0, tested.out + tested.err);
  BOOST_TEST(contains(tested.out, "100% tests passed"), tested.out);

  // The installed executable lists plugins without libtorch, and finds its
  // training side (lib/libskein_commands.so) for train.
  auto listing = test::run("env LD_DEBUG=files " + skein() + " plugins");
  BOOST_TEST(listing.exit_code == 0, listing.err);
  BOOST_TEST(!contains(listing.err, "libtorch"), listing.err);

  // By path. record_block_norm reaches the model residual_mlp made, by its
  // type, through the library both link (skein_add_plugin_library).
  auto r = test::run(skein() + " train --config " + tmp.str("cfg.json") + " --run-dir " + tmp.str("r1") +
                     " --plugin " + build() + "/libresidual_mlp.so --plugin " + build() +
                     "/libstop_at_accuracy.so:target=0.9 --plugin " + build() + "/librecord_block_norm.so");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.out, "valid_acc reached"), r.out);
  auto config = nlohmann::json::parse(test::read_text(tmp.str("r1/config.json")));
  BOOST_TEST(config["plugin_versions"]["residual_mlp"]["version"].get<std::string>() == "1.0.0");
  for (const auto& epoch : nlohmann::json::parse(test::read_text(tmp.str("r1/history.json"))))
    BOOST_TEST(epoch.value("block_norm", 0.0) > 0, epoch.dump());

  // The history backend on two processes: every rank's history is the same
  // (run.json's end-of-run check, enforced as the backend synchronizes ranks).
  auto two = test::synthetic_config();
  two["history"] = {{"plugin", "jsonl_history"}};
  two["max_epochs"] = 2;
  test::write_text(tmp.str("two.json"), two.dump());
  r = test::run(test::in_private_network(skein() + " train --config " + tmp.str("two.json") + " --run-dir " +
                                         tmp.str("r3") + " --nproc-per-node 2 --timeout 60 --plugin " + build() +
                                         "/libjsonl_history.so"),
                240);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.out + r.err);
  const auto run_json = nlohmann::json::parse(test::read_text(tmp.str("r3/run.json")));
  BOOST_TEST(run_json["consistent"] == true, run_json.dump());
  BOOST_TEST(run_json["checked"] == true, run_json.dump());
  const auto history = nlohmann::json::parse(test::read_text(tmp.str("r3/history.json")));
  BOOST_TEST_REQUIRE(history.size() == 2u);
  std::set<int> ranks;
  for (const auto& row : history[1]["batches"]) ranks.insert(row["rank"].get<int>());
  BOOST_TEST(ranks == (std::set<int>{0, 1}));
  for (const char* file : {"r3/history_ranks/rank0.jsonl", "r3/history_ranks/rank1.jsonl"})
    BOOST_TEST(test::read_text(tmp.str(file)).find(run_json["run_id"].get<std::string>()) != std::string::npos, file);

  // By name, found through SKEIN_PLUGIN_PATH.
  r = test::run("env SKEIN_PLUGIN_PATH=" + build() + " " + skein() + " train --config " + tmp.str("cfg.json") +
                " --run-dir " + tmp.str("r2") + " --plugin stop_at_accuracy:target=0.9");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.out, "valid_acc reached"), r.out);

  // Installed next to the bundled plugins, they are simply there.
  r = test::run(std::string(CMAKE_COMMAND) + " --install " + build() + " --prefix " + prefix());
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  r = test::run(skein() + " plugins describe residual_mlp");
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST(contains(r.out, prefix() + "/lib/skein/plugins/libresidual_mlp.so"), r.out);
  BOOST_TEST(contains(r.out, "blocks"), r.out);
  // The shared model library went to lib/, where the installed plugins find it.
  BOOST_TEST(fs::exists(prefix() + "/lib/libresidual_mlp_net.so"));
  r = test::run(skein() + " train --config " + tmp.str("cfg.json") + " --run-dir " + tmp.str("r4") +
                " --set max_epochs=1 --plugin record_block_norm");
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(test::read_text(tmp.str("r4/history.json")).find("block_norm") != std::string::npos);

  // Skein's and the example's installed files find their libraries through
  // $ORIGIN (and a wheel's libtorch directory), and nothing else.
  const auto bad = bad_rpath_entries(prefix());
  BOOST_TEST(bad.empty(), "RPATH entries that are no directory or foreign:\n" << boost::algorithm::join(bad, "\n"));
}

// An application training in-process: examples/embed built against the
// install (skein::session, skein::c, the Fortran module's source), then run.
BOOST_AUTO_TEST_CASE(session_programs_build_against_the_install_and_train) {
  const std::string build_dir = tmp.str("embed-build");
  auto r = test::run(kWithoutCudaToolkit + CMAKE_COMMAND + " -S " SKEIN_SOURCE_DIR "/examples/embed -B " + build_dir +
                         " -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=" + prefix() +
                         " -DCMAKE_CXX_COMPILER_LAUNCHER=" + ccache(),
                     300);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.out + r.err);
  r = test::run(kWithoutCudaToolkit + CMAKE_COMMAND + " --build " + build_dir + " -j 2", 600);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.out + r.err);
  const std::string config = SKEIN_SOURCE_DIR "/examples/embed/surrogate.json";
  for (const char* program : {"pendulum", "pendulum_c"}) {
    r = test::run(build_dir + "/" + program + " " + config + " " + tmp.str(std::string("run-") + program) + " 3");
    BOOST_TEST(r.exit_code == 0, program << ": " << r.err);
    BOOST_TEST(contains(r.out, "surrogate rollout"), r.out);
  }
}

BOOST_AUTO_TEST_SUITE_END()

// `cmake --install` of a build that lacks a file it would copy (as after
// scripts/example.sh, which builds only skein_runtime) copies nothing and
// names the command that builds what it needs. The build is configured as on
// a machine without a CUDA toolkit, and holds libskein_base alone.
BOOST_AUTO_TEST_CASE(install_of_a_partial_build_copies_nothing_and_names_the_command) {
  test::TempDir tmp;
  const std::string build = tmp.str("build"), prefix = tmp.str("prefix");
  auto r = test::run(kWithoutCudaToolkit + CMAKE_COMMAND + " -S " SKEIN_SOURCE_DIR " -B " + build +
                         " -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DSKEIN_BUILD_BENCH=OFF"
                         " -DCMAKE_PREFIX_PATH=" SKEIN_TORCH_PREFIX,
                     300);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.out + r.err);
  r = test::run(std::string(CMAKE_COMMAND) + " --build " + build + " --target skein_base", 600);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.out + r.err);
  r = test::run(std::string(CMAKE_COMMAND) + " --install " + build + " --prefix " + prefix);
  BOOST_TEST(r.exit_code != 0);
  BOOST_TEST(contains(r.err, "Skein: nothing installed"), r.err);
  BOOST_TEST(contains(r.err, "run `cmake --build " + build + " --target skein_install_set` first"), r.err);
  BOOST_TEST((!fs::exists(prefix) || fs::is_empty(prefix)), "a half-installed " << prefix);
}
