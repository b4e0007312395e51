#define BOOST_TEST_MODULE cli
#include <boost/test/unit_test.hpp>

#include <regex>
#include <sstream>

#include "skein/detail/version.hpp"
#include "skein/io/npy.hpp"
#include "test_support.hpp"
#include "skein/torch_compat/backends.hpp"

namespace {

using test::contains;
using test::one_error_line;
const std::string kSkein = SKEIN_EXE;

struct Fixture {
  Fixture() {
    auto cfg = test::synthetic_config();
    cfg.erase("callbacks");  // the default: print_log
    test::write_text(tmp.str("tiny.json"), cfg.dump(2));
  }
  test::TempDir tmp;
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(cli, Fixture)

BOOST_AUTO_TEST_CASE(version_and_help) {
  auto r = test::run(kSkein + " --version");
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.out, "plugin API " SKEIN_HOST_API), r.out);
  // The libtorch it was built with and the one it runs with (read from the
  // loaded library): the same here, and whether CUDA is in it.
  BOOST_TEST(contains(r.out, "built with:   libtorch " TORCH_VERSION), r.out);
  BOOST_TEST(contains(r.out, "running with: libtorch " TORCH_VERSION), r.out);
  BOOST_TEST((contains(r.out, "with CUDA") || contains(r.out, "CPU only")), r.out);
  BOOST_TEST(contains(r.out, "distributed backends gloo"), r.out);
  // ddp's description names the backends compiled in (NCCL in CUDA builds).
  const auto ddp = test::run(kSkein + " plugins describe ddp");
  BOOST_TEST(contains(ddp.out, "compiled in: gloo"), ddp.out);
  BOOST_TEST(contains(ddp.out, "must be auto, gloo or nccl"), ddp.out);
#if SKEIN_TORCH_NCCL
  BOOST_TEST(contains(ddp.out, "compiled in: gloo, nccl"), ddp.out);
#endif
  const auto help = test::run(kSkein + " train --help");
  BOOST_TEST(help.exit_code == 0);
  // The config's keys, with types and defaults, not only the flags.
  for (const char* key : {"max_epochs (int, default 10)", "valid_split (number, default 0.1)", "data_info", "seed"})
    BOOST_TEST(contains(help.out, key), help.out);
  // plugins takes its words positionally; its help shows no internal option for them.
  const auto plugins_help = test::run(kSkein + " plugins --help");
  BOOST_TEST(plugins_help.exit_code == 0);
  BOOST_TEST(contains(plugins_help.out, "describe"), plugins_help.out);
  BOOST_TEST(!contains(plugins_help.out, "--args"), plugins_help.out);
  BOOST_TEST(!contains(plugins_help.out, "--words"), plugins_help.out);
  BOOST_TEST(test::run(kSkein).exit_code == 2);
  auto bad = test::run(kSkein + " frobnicate");
  BOOST_TEST(bad.exit_code == 2);
  BOOST_TEST(one_error_line(bad), bad.err);
}

// The commands that neither train nor run a model start without libtorch
// (about 0.75 s of loading): the executable does not link it, and loads the
// training side (libskein_commands, then libskein_core and libtorch) only for
// train, export and predict, once their arguments parsed, and for --version,
// which reports the libtorch it runs with.
BOOST_AUTO_TEST_CASE(commands_that_do_not_train_never_load_libtorch) {
  // LD_DEBUG=files names every library the dynamic loader opens, on stderr.
  const auto load = [](const std::string& args) { return test::run("env LD_DEBUG=files " + kSkein + " " + args); };
  const auto loads_torch = [](const test::CommandResult& r) {
    // LD_DEBUG's "file=NAME" lines, not messages that merely mention libtorch.
    return contains(r.err, "file=libtorch") || contains(r.err, "file=libskein_core") ||
           contains(r.err, "file=libskein_sdk");
  };
  for (const std::string args : {"--help", "plugins", "plugins --json", "plugins describe mlp",
                                 "plugins describe " TEST_PLUGIN_DIR "/libtest_probe_callback.so",
                                 "plugins --plugin-dir " BROKEN_PLUGIN_DIR, "plugins describe mpl",
                                 "train --help", "export --help", "predict --help", "train --no-such-flag",
                                 "export --format state_dict"}) {
    const auto r = load(args);
    BOOST_TEST(contains(r.err, "file=libskein_host"), "LD_DEBUG has no effect? skein " << args << ":\n" << r.err);
    BOOST_TEST(!loads_torch(r), "skein " << args << " loaded libtorch:\n" << r.err);
  }
  // What the executable itself needs (DT_NEEDED): no libtorch, no libskein_sdk or _core.
  const auto needed = test::run("readelf -d " + kSkein);
  if (needed.exit_code == 0) {
    BOOST_TEST(contains(needed.out, "libskein_host"), needed.out);
    BOOST_TEST(!contains(needed.out, "libtorch"), needed.out);
    BOOST_TEST(!contains(needed.out, "libskein_sdk"), needed.out);
    BOOST_TEST(!contains(needed.out, "libskein_core"), needed.out);
  }
  // train, export and predict load it, and their errors are as before: one line, exit 2.
  const auto r = load("export " + tmp.str("no-such-run") + " --format state_dict --out " + tmp.str("x.pt"));
  BOOST_TEST(loads_torch(r), r.err);
  BOOST_TEST(r.exit_code == 2, r.err);
  const auto plain = test::run(kSkein + " export " + tmp.str("no-such-run") + " --format state_dict --out " +
                               tmp.str("x.pt"));
  BOOST_TEST(plain.exit_code == 2);
  BOOST_TEST(one_error_line(plain), plain.err);
}

BOOST_AUTO_TEST_CASE(plugins_lists_json_with_required_fields) {
  auto r = test::run(kSkein + " plugins --json");
  BOOST_REQUIRE(r.exit_code == 0);
  auto list = nlohmann::json::parse(r.out);
  BOOST_REQUIRE(list.is_array());
  bool found = false;
  for (const auto& p : list) {
    for (const char* key : {"name", "kind", "version", "path", "description"})
      BOOST_TEST(p.contains(key), key);
    if (p["name"] == "mlp") {
      found = true;
      BOOST_TEST(p["kind"].get<std::string>() == "model");
      BOOST_TEST(contains(p["path"].get<std::string>(), "libskein_model_mlp.so"));
    }
  }
  BOOST_TEST(found);
  auto table = test::run(kSkein + " plugins");
  BOOST_TEST(table.exit_code == 0);
  BOOST_TEST(contains(table.out, "print_log"));
  BOOST_TEST(contains(table.out, "callback"));
  // Every column is followed by at least two spaces, however long a name or
  // kind is (probe_callback is 14 characters, optimizer 9).
  auto wide = test::run(kSkein + " plugins --plugin-dir " TEST_PLUGIN_DIR);
  std::istringstream lines(wide.out);
  const std::regex row(R"(^\S+ {2,}\S+ {2,}\S+ {2,}\S.*$)");
  int rows = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == ' ') continue;  // the file path line
    BOOST_TEST(std::regex_match(line, row), line);
    ++rows;
  }
  BOOST_TEST(rows > 10);
}

BOOST_AUTO_TEST_CASE(describe_prints_every_option) {
  auto r = test::run(kSkein + " plugins describe mlp");
  BOOST_TEST(r.exit_code == 0);
  for (const char* part : {"hidden", "int list", "[256, 128]", "activation", "dropout"})
    BOOST_TEST(contains(r.out, part), part);
  // Declared limits (API 3.1): a choice's values, a range in words.
  for (const char* part : {"choice", "must be relu, gelu, tanh, sigmoid, leaky_relu or elu", "must be in [0, 1)"})
    BOOST_TEST(contains(r.out, part), part);
  const auto json = nlohmann::json::parse(test::run(kSkein + " plugins describe mlp --json").out);
  BOOST_TEST(json.dump().find(R"("choices":["relu","gelu","tanh","sigmoid","leaky_relu","elu"])") != std::string::npos,
             json.dump());
  auto missing = test::run(kSkein + " plugins describe mpl");
  BOOST_TEST(missing.exit_code == 2);
  BOOST_TEST(one_error_line(missing), missing.err);
  BOOST_TEST(contains(missing.err, "did you mean 'mlp'"), missing.err);
}

BOOST_AUTO_TEST_CASE(describe_takes_a_plugin_file) {
  auto r = test::run(kSkein + " plugins describe " TEST_PLUGIN_DIR "/libtest_probe_callback.so");
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.out, "probe_callback (callback plugin"), r.out);
  BOOST_TEST(contains(r.out, "stop_at"), r.out);
}

BOOST_AUTO_TEST_CASE(broken_plugins_are_warnings_in_the_listing) {
  auto r = test::run(kSkein + " plugins --plugin-dir " BROKEN_PLUGIN_DIR);
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST(contains(r.out, "mlp"));
  BOOST_TEST(contains(r.err, "Wrong API version on plugin"), r.err);
  BOOST_TEST(contains(r.err, "libtest_not_a_plugin.so"), r.err);
}

BOOST_AUTO_TEST_CASE(plugin_path_environment_is_scanned) {
  auto r = test::run("env SKEIN_PLUGIN_PATH=" TEST_PLUGIN_DIR " " + kSkein + " plugins --json");
  BOOST_REQUIRE(r.exit_code == 0);
  BOOST_TEST(contains(r.out, "\"probe_model\""));
  auto debug = test::run("env SKEIN_DEBUG_PLUGINS=1 " + kSkein + " plugins");
  BOOST_TEST(contains(debug.err, "registered 'mlp'"), debug.err);
}

BOOST_AUTO_TEST_CASE(listing_plugins_runs_no_plugin_code) {
  const std::string marker = tmp.str("loaded");
  auto list = test::run("env SKEIN_TEST_LOAD_MARKER=" + marker + " " + kSkein +
                        " plugins describe probe_callback --plugin-dir " TEST_PLUGIN_DIR);
  BOOST_TEST(list.exit_code == 0);
  BOOST_TEST(contains(list.out, "stop_below"));
  BOOST_TEST(!boost::filesystem::exists(marker), "skein plugins loaded the library");
  auto debug = test::run("env SKEIN_DEBUG_PLUGINS=1 " + kSkein + " plugins --plugin-dir " TEST_PLUGIN_DIR);
  BOOST_TEST(contains(debug.err, "read the manifest of"), debug.err);
  // Using it loads it.
  auto train = test::run("env SKEIN_TEST_LOAD_MARKER=" + marker + " " + kSkein + " train --config " +
                         tmp.str("tiny.json") + " --run-dir " + tmp.str("m") + " --set max_epochs=1" +
                         " --plugin-dir " TEST_PLUGIN_DIR " --plugin probe_callback");
  BOOST_TEST(train.exit_code == 0, train.err);
  BOOST_TEST(boost::filesystem::exists(marker));
}

// The config the README shows trains as written (on tiny data in the idx
// format instead of Fashion-MNIST, for time), its step checkpoints included.
BOOST_AUTO_TEST_CASE(the_readme_config_example_trains) {
  const std::string readme = test::read_text(SKEIN_SOURCE_DIR "/README.md");
  const auto intro = readme.find("A config is one JSON object");
  BOOST_REQUIRE(intro != std::string::npos);
  const auto start = readme.find("```json\n", intro);
  const auto end = readme.find("```", start + 8);
  BOOST_REQUIRE(start != std::string::npos && end != std::string::npos);
  auto cfg = nlohmann::json::parse(readme.substr(start + 8, end - start - 8));
  test::write_tiny_mnist(tmp.str(""), 640, 100, true);
  cfg["data"]["dir"] = tmp.str("");
  cfg["max_epochs"] = 1;
  cfg["callbacks"][1]["every_n_steps"] = 5;
  test::write_text(tmp.str("readme.json"), cfg.dump());
  const std::string run_dir = tmp.str("readme-run");
  auto r = test::run(kSkein + " train --config " + tmp.str("readme.json") + " --run-dir " + run_dir, 240);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.out, "Test accuracy:"), r.out);
  BOOST_TEST(boost::filesystem::exists(run_dir + "/checkpoints/step_00000005/trainer.json"));
}

BOOST_AUTO_TEST_CASE(train_writes_a_complete_run_directory) {
  const std::string run_dir = tmp.str("run");
  auto r = test::run(kSkein + " train --config " + tmp.str("tiny.json") + " --set max_epochs=2 --run-dir " + run_dir);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.out, "train_loss"), r.out);
  BOOST_TEST(contains(r.out, "valid_acc"), r.out);
  BOOST_TEST(contains(r.out, "Test accuracy:"), r.out);
  auto history = nlohmann::json::parse(test::read_text(run_dir + "/history.json"));
  BOOST_TEST(history.size() == 2u);
  auto config = nlohmann::json::parse(test::read_text(run_dir + "/config.json"));
  BOOST_TEST(config["max_epochs"].get<int>() == 2);
  BOOST_TEST(config["plugin_versions"]["print_log"]["version"].get<std::string>() == "1.1.0");
  auto results = nlohmann::json::parse(test::read_text(run_dir + "/results.json"));
  BOOST_TEST(results["test_samples"].get<int>() == 128);
  BOOST_TEST(contains(test::read_text(run_dir + "/train.log"), "valid_loss"));
  // "device": "auto" resolved, said in both places (the CPU on a machine without a GPU).
  const std::string device = results["device"].get<std::string>();
  BOOST_TEST((device == "cpu" || device.rfind("cuda:", 0) == 0), device);
  BOOST_TEST(contains(test::read_text(run_dir + "/train.log"), "Device: " + device + " (auto"));

  // The directory now holds a run: refused, nothing overwritten.
  auto again = test::run(kSkein + " train --config " + tmp.str("tiny.json") + " --run-dir " + run_dir);
  BOOST_TEST(again.exit_code == 2);
  BOOST_TEST(one_error_line(again), again.err);
  BOOST_TEST(contains(again.err, "already holds a run"), again.err);
  BOOST_TEST(nlohmann::json::parse(test::read_text(run_dir + "/history.json")).size() == 2u);

  // Unless asked to replace it.
  auto over = test::run(kSkein + " train --config " + tmp.str("tiny.json") + " --set max_epochs=1 --run-dir " +
                        run_dir + " --overwrite");
  BOOST_TEST(over.exit_code == 0, over.err);
  BOOST_TEST(nlohmann::json::parse(test::read_text(run_dir + "/history.json")).size() == 1u);
}

BOOST_AUTO_TEST_CASE(plugin_file_given_by_path_is_used) {
  auto r = test::run(kSkein + " train --config " + tmp.str("tiny.json") + " --run-dir " + tmp.str("r") +
                     " --plugin " TEST_PLUGIN_DIR "/libtest_probe_callback.so:stop_at=1");
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(nlohmann::json::parse(test::read_text(tmp.str("r/history.json"))).size() == 1u);
  BOOST_TEST(contains(r.out, "probe asked at epoch 1"), r.out);
}

BOOST_AUTO_TEST_CASE(config_errors_exit_2_with_one_line) {
  auto missing = test::run(kSkein + " train --config " + tmp.str("nope.json"));
  BOOST_TEST(missing.exit_code == 2);
  BOOST_TEST(one_error_line(missing), missing.err);
  BOOST_TEST(contains(missing.err, "nope.json"));

  auto typo = test::run(kSkein + " train --config " + tmp.str("tiny.json") + " --set batch_sise=3");
  BOOST_TEST(typo.exit_code == 2);
  BOOST_TEST(one_error_line(typo), typo.err);
  BOOST_TEST(contains(typo.err, "did you mean 'batch_size'"), typo.err);

  // The config given without --config is the config; a second word is refused.
  auto bare = test::run(kSkein + " train " + tmp.str("nope.json"));
  BOOST_TEST(bare.exit_code == 2);
  BOOST_TEST(one_error_line(bare), bare.err);
  BOOST_TEST(contains(bare.err, "cannot read config file '" + tmp.str("nope.json") + "'"), bare.err);
  auto extra = test::run(kSkein + " train --config " + tmp.str("tiny.json") + " " + tmp.str("other.json"));
  BOOST_TEST(extra.exit_code == 2);
  BOOST_TEST(one_error_line(extra), extra.err);

  auto flag = test::run(kSkein + " train --bogus");
  BOOST_TEST(flag.exit_code == 2);
  BOOST_TEST(one_error_line(flag), flag.err);

  auto api = test::run(kSkein + " train --config " + tmp.str("tiny.json") +
                       " --plugin " BROKEN_PLUGIN_DIR "/libtest_wrong_api.so");
  BOOST_TEST(api.exit_code == 2);
  BOOST_TEST(one_error_line(api), api.err);
  BOOST_TEST(contains(api.err, "got 4." SKEIN_STR(SKEIN_API_MINOR) ", host supports " SKEIN_HOST_API), api.err);

  // A device that is not there: one line naming it, before anything trains.
  auto gpu = test::run(kSkein + " train --config " + tmp.str("tiny.json") + " --set device=cuda:63");
  BOOST_TEST(gpu.exit_code == 2);
  BOOST_TEST(one_error_line(gpu), gpu.err);
  BOOST_TEST(contains(gpu.err, "device: 'cuda:63' asked for, but "), gpu.err);
  auto spelling = test::run(kSkein + " train --config " + tmp.str("tiny.json") + " --set device=gpu");
  BOOST_TEST(spelling.exit_code == 2);
  BOOST_TEST(contains(spelling.err, "device: must be auto, cpu, cuda or cuda:N, got 'gpu'"), spelling.err);

  auto two = test::run(kSkein + " train --config " + tmp.str("tiny.json") + " --plugin local --plugin local");
  BOOST_TEST(two.exit_code == 2);
  BOOST_TEST(contains(two.err, "two history plugins"), two.err);
}

BOOST_AUTO_TEST_CASE(data_errors_exit_1_with_one_line) {
  test::TempDir data;
  test::write_tiny_mnist(data.str(), 10, 10, false);
  test::write_text(data.str("train-images-idx3-ubyte"), "garbage!");
  auto r = test::run(kSkein + " train --config " + tmp.str("tiny.json") + " --run-dir " + tmp.str("d") +
                     " --plugin idx:dir=" + data.str());
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(one_error_line(r), r.err);
  BOOST_TEST(contains(r.err, "bad magic"), r.err);
}

// The launcher's lines about a failed attempt reach train.log, not only the
// terminal: the log went from epoch 1 to "Resumed from ..." (issue 48).
BOOST_AUTO_TEST_CASE(a_killed_attempt_is_in_train_log) {
  auto cfg = test::two_process_config();
  cfg["max_epochs"] = 3;
  test::write_text(tmp.str("two.json"), cfg.dump());
  const std::string run = tmp.str("killed");
  // Rank 1 is killed in epoch 2 of the first attempt; the restart resumes from epoch 1's checkpoint.
  auto r = test::run(test::in_private_network(
      kSkein + " train --plugin-dir " TEST_PLUGIN_DIR " --config " + tmp.str("two.json") + " --run-dir " + run +
      " --nproc-per-node 2 --timeout 30 --max-restarts 1 "
      "--plugin probe_callback:signal_at=2,signal=9,signal_rank=1,only_attempt=0"));
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string log = test::read_text(run + "/train.log");
  const auto failed = log.find("skein: error: worker rank 1 on ");
  const auto restarting = log.find("skein: restarting all workers (restart 1 of 1)\n");
  const auto resumed = log.find("Resumed from " + run + "/checkpoints/epoch_0001");
  BOOST_TEST(failed != std::string::npos, log);
  BOOST_TEST(contains(log.substr(failed == std::string::npos ? 0 : failed), "with signal 9 (Killed)\n"), log);
  BOOST_TEST(restarting != std::string::npos, log);
  BOOST_TEST(resumed != std::string::npos, log);
  BOOST_TEST((failed < restarting && restarting < resumed), log);
}

// A resume on another world size says what becomes of the global batch, at
// the same learning rate, and where the docs say what to do (issue 48).
BOOST_AUTO_TEST_CASE(a_resume_on_another_world_size_gives_the_global_batch_before_and_after) {
  auto cfg = test::two_process_config();
  cfg["max_epochs"] = 1;
  test::write_text(tmp.str("two.json"), cfg.dump());
  const std::string run = tmp.str("resized");
  auto two = test::run(test::in_private_network(kSkein + " train --plugin-dir " TEST_PLUGIN_DIR " --config " +
                                                tmp.str("two.json") + " --run-dir " + run +
                                                " --nproc-per-node 2 --timeout 30"));
  BOOST_REQUIRE_MESSAGE(two.exit_code == 0, two.err);
  // Two processes of batch_size 32 to one: the global batch halves.
  auto alone = test::run(test::in_private_network(kSkein + " train --resume " + run + " --set max_epochs=2"));
  BOOST_REQUIRE_MESSAGE(alone.exit_code == 0, alone.err);
  const std::string log = test::read_text(run + "/train.log");
  const auto line = log.find("World size 2 -> 1 (checkpoint ");
  BOOST_REQUIRE_MESSAGE(line != std::string::npos, log);
  BOOST_TEST(contains(log.substr(line, log.find('\n', line) - line),
                      "; the global batch 64 -> 32 samples per optimizer step at the same learning rate (rescaling: "
                      "docs/user-guide.md, \"Checkpoints and resume\")"),
             log);
}

// Workers beyond the documented bounds are refused in one line before any
// starts: 8 per usable core (taskset: one core here, so 8), and a world that
// the open-file limit cannot connect (each worker to every other). 100000
// kept forking workers (issue 49). --timeout beyond 30 days overflowed Gloo.
BOOST_AUTO_TEST_CASE(worker_counts_and_the_timeout_are_bounded_before_any_worker_starts) {
  const std::string run = tmp.str("bounded");
  const std::string train = kSkein + " train --config " + tmp.str("tiny.json") + " --run-dir " + run + " ";
  auto many = test::run("taskset -c 0 " + train + "--nproc-per-node 9", 60);
  BOOST_TEST(many.exit_code == 2, many.err);
  BOOST_TEST(one_error_line(many), many.err);
  BOOST_TEST(contains(many.err, "--nproc-per-node 9: at most 8 on this machine (8 per CPU core, 1 core usable)"),
             many.err);
  auto world = test::run("sh -c 'ulimit -n 100; exec " + train +
                             "--nproc-per-node 2 --nnodes 30 --node-rank 1 --master-port 1'", 60);
  BOOST_TEST(world.exit_code == 2, world.err);
  BOOST_TEST(one_error_line(world), world.err);
  BOOST_TEST(contains(world.err, "--nnodes 30 x --nproc-per-node 2 = 60 workers"), world.err);
  BOOST_TEST(contains(world.err, "open-file limit 100 (ulimit -n) allows, at most 36 workers"), world.err);
  auto timeout = test::run(train + "--nproc-per-node 2 --timeout 1e20", 60);
  BOOST_TEST(timeout.exit_code == 2, timeout.err);
  BOOST_TEST(one_error_line(timeout), timeout.err);
  BOOST_TEST(contains(timeout.err, "--timeout 1e+20: must be a number of seconds in (0, 2592000] (30 days)"),
             timeout.err);
  auto env = test::run("env SKEIN_TIMEOUT_S=1e20 " + train, 60);
  BOOST_TEST(env.exit_code == 2, env.err);
  BOOST_TEST(contains(env.err, "SKEIN_TIMEOUT_S='1e20': must be a number of seconds in (0, 2592000]"), env.err);
  BOOST_TEST(!boost::filesystem::exists(run));
}

// export and predict run a trained model: their refusals of a device name
// their --device flag and say how to run the model on the CPU, not "train".
BOOST_AUTO_TEST_CASE(export_and_predict_name_their_device_flag) {
  const std::string run = tmp.str("dev");
  auto trained = test::run(kSkein + " train --config " + tmp.str("tiny.json") + " --run-dir " + run +
                           " --set max_epochs=1 --plugin checkpoint");
  BOOST_REQUIRE_MESSAGE(trained.exit_code == 0, trained.err);
  test::write_text(tmp.str("in.npy"), skein::npy_bytes(torch::zeros({2, 16})));
  for (const std::string command : {"export " + run + " --format state_dict --out " + tmp.str("x.pt"),
                                    "predict " + run + " --inputs " + tmp.str("in.npy") + " --out " + tmp.str("y.npy")}) {
    auto r = test::run(kSkein + " " + command + " --device cuda:63");
    BOOST_TEST(r.exit_code == 2, r.err);
    BOOST_TEST(one_error_line(r), r.err);
    BOOST_TEST(contains(r.err, "skein: error: --device: 'cuda:63' asked for, but "), r.err);
    BOOST_TEST(!contains(r.err, "train"), r.err);
    auto spelled = test::run(kSkein + " " + command + " --device gpu");
    BOOST_TEST(contains(spelled.err, "--device: must be auto, cpu, cuda or cuda:N, got 'gpu'"), spelled.err);
  }
}

// One symbolic link loop in a plugin directory broke every command with
// Boost's raw error (issue 49): it is skipped with a warning.
BOOST_AUTO_TEST_CASE(a_symbolic_link_loop_in_a_plugin_directory_is_skipped) {
  boost::filesystem::create_directories(tmp.str("loops"));
  boost::filesystem::create_symlink("libloop.so", tmp.str("loops/libloop.so"));
  const std::string env = "env SKEIN_PLUGIN_PATH=" + tmp.str("loops") + " ";
  auto listed = test::run(env + kSkein + " plugins");
  BOOST_TEST(listed.exit_code == 0, listed.err);
  BOOST_TEST(contains(listed.out, "mlp"), listed.out);
  BOOST_TEST(contains(listed.err, "skein: warning: plugin directory '" + tmp.str("loops") +
                                      "': skipped 'libloop.so': Too many levels of symbolic links"),
             listed.err);
  auto trained = test::run(env + kSkein + " train --config " + tmp.str("tiny.json") + " --run-dir " +
                           tmp.str("loop-run") + " --set max_epochs=1");
  BOOST_TEST(trained.exit_code == 0, trained.err);
  auto named = test::run(kSkein + " plugins --plugin-dir " + tmp.str("loops/libloop.so"));
  BOOST_TEST(named.exit_code == 2, named.err);
  BOOST_TEST(one_error_line(named), named.err);
  BOOST_TEST(contains(named.err, "is not a directory (Too many levels of symbolic links)"), named.err);
}

BOOST_AUTO_TEST_SUITE_END()
