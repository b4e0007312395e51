#define BOOST_TEST_MODULE interop
#include <boost/test/unit_test.hpp>

#include <array>
#include <filesystem>

#include <torch/torch.h>

#include "skein/training/run/model_io.hpp"
#include "skein/training/checkpoint/state_dict_io.hpp"
#include "skein/errors.hpp"
#include "skein/io/npy.hpp"
#include "test_support.hpp"

// Models, weights and arrays shared with Python (Debian's python3-torch and
// python3-numpy): TorchScript models trained by skein, loss and optimizer
// plugins, warm start, export and predict read back in Python.

namespace {

using test::contains;
using test::load_json;
const std::string kSkein = SKEIN_EXE;

struct Fixture : test::Workspace {
  // tests/python/interop.py with `args`; its failures name what differed.
  test::CommandResult py(const std::string& args) { return test::interop_py(args); }
  test::CommandResult skein(const std::string& args) {
    return test::run(test::in_private_network(kSkein + " " + args), 300);
  }
  test::CommandResult train(const nlohmann::json& cfg, const std::string& run_dir, const std::string& more = "") {
    return skein("train --config " + write_config(cfg) + " --run-dir " + dir(run_dir) +
                 " --plugin-dir " TEST_PLUGIN_DIR " " + more);
  }
  std::string script(const std::string& kind) {
    const std::string path = dir(kind + ".pt");
    auto r = py("script " + kind + " " + path);
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    return path;
  }
};

// 8x8 single-channel images in 4 classes, for interop.py's Classifier.
nlohmann::json image_config(const std::string& model_path) {
  auto cfg = test::synthetic_config();
  cfg["model"] = {{"plugin", "torchscript"}, {"path", model_path}};
  cfg["data"] = {{"plugin", "synthetic"}, {"samples", 256}, {"test_samples", 64}, {"shape", {1, 8, 8}}, {"classes", 4}};
  cfg["optimizer"] = {{"plugin", "adam"}, {"lr", 0.01}};
  cfg["max_epochs"] = 2;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}, {{"plugin", "script_probe"}}};
  return cfg;
}

// 4 features, float targets from a linear function.
nlohmann::json regression_config(const std::string& loss) {
  auto cfg = test::synthetic_config();
  cfg["data"] = {{"plugin", "synthetic"}, {"samples", 256}, {"test_samples", 64}, {"shape", {4}}, {"task", "regression"}};
  cfg["model"] = {{"plugin", "mlp"}, {"hidden", {16}}};
  cfg["loss"] = {{"plugin", loss}};
  cfg["optimizer"] = {{"plugin", "sgd"}, {"lr", 0.02}, {"momentum", 0.9}};
  cfg["max_epochs"] = 4;
  return cfg;
}

// A TorchScript model of 4 inputs (interop.py's Regressor and its variants),
// one epoch, a checkpoint.
nlohmann::json script_regression_config(const std::string& model_path) {
  auto cfg = regression_config("mse");
  cfg["model"] = {{"plugin", "torchscript"}, {"path", model_path}};
  cfg["max_epochs"] = 1;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
  return cfg;
}

nlohmann::json without_durations(nlohmann::json epochs) {
  for (auto& e : epochs) e.erase("dur");
  return epochs;
}


}  // namespace

BOOST_FIXTURE_TEST_SUITE(interop, Fixture)

// Labels 1..C (as R or a spreadsheet numbers classes) count as C + 1
// classes; against a model of C outputs the error says why.
BOOST_AUTO_TEST_CASE(labels_starting_at_one_are_named_as_the_cause) {
  auto r = py("inputs " + dir("x.npy") + " float32 64 1 8 8");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = py("labels " + dir("y.npy") + " 64 4 1");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  auto cfg = image_config(script("classifier"));
  cfg["data"] = {{"plugin", "npy"}, {"train_inputs", dir("x.npy")}, {"train_targets", dir("y.npy")}};
  cfg["callbacks"] = nlohmann::json::array();
  auto t = train(cfg, "ones");
  BOOST_TEST(t.exit_code != 0);
  BOOST_TEST(contains(t.err, "the labels start at 1; shift them to 0..3, or give the model 5 outputs"), t.err);
}

// A forward that fails in the TorchScript interpreter: one line naming the
// model plugin, the inputs' shape and the failing op (not the interpreter's
// header alone).
BOOST_AUTO_TEST_CASE(a_failing_forward_names_the_model_the_inputs_and_the_op) {
  auto cfg = image_config(script("classifier"));
  cfg["data"]["shape"] = {16};  // a table, for a CNN
  cfg["callbacks"] = nlohmann::json::array();
  test::expect_one_error(train(cfg, "table"), 1,
                         {"model 'torchscript' failed on inputs of shape [32, 16]", "conv2d", "[32, 16]"});
}

// The reference values plugin tests read (PyTorch's learning-rate schedules,
// scikit-learn's scores) are what Python computes today.
BOOST_AUTO_TEST_CASE(plugin_reference_values_are_what_python_computes) {
  for (const auto& [command, file] : std::vector<std::pair<std::string, std::string>>{
           {"lr_schedules", "plugins/callback/lr_scheduler/pytorch_schedules.json"},
           {"sklearn_scores", "plugins/callback/scoring/sklearn_scores.json"}}) {
    const auto r = py(command + " " + dir(command + ".json"));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(load_json(dir(command + ".json")) == load_json(std::string(SKEIN_SOURCE_DIR "/") + file), file);
  }
}

// The docs' TorchScript example (examples/torchscript/make_cnn.py, shown in
// docs/user-guide.md) writes a model that trains through the torchscript plugin.
BOOST_AUTO_TEST_CASE(the_torchscript_example_model_trains) {
  const std::string model = dir("cnn.pt");
  auto r = test::run(std::string(SKEIN_TEST_PYTHON) + " " SKEIN_SOURCE_DIR "/examples/torchscript/make_cnn.py " + model,
                     240);
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  auto cfg = test::synthetic_config();
  cfg["model"] = {{"plugin", "torchscript"}, {"path", model}};
  cfg["data"] = {{"plugin", "synthetic"}, {"samples", 128}, {"test_samples", 32}, {"shape", {1, 28, 28}}, {"classes", 10}};
  cfg["max_epochs"] = 1;
  r = train(cfg, "cnn");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST(load_json(dir("cnn/history.json")).size() == 1u);
}

BOOST_AUTO_TEST_CASE(torchscript_model_trains_resumes_and_exports) {
  const std::string model = script("classifier");
  auto cfg = image_config(model);
  auto r = train(cfg, "a");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  auto history = load_json(dir("a/history.json"));
  BOOST_TEST_REQUIRE(history.size() == 2u);
  BOOST_TEST(history[1]["valid_acc"].get<double>() > 0.5);
  // The callback reached the scripted module's own attribute and method, and
  // the module follows the trainer's train/eval mode (eval after validation).
  BOOST_TEST(history[1]["script_scale"].get<double>() == 1.5);
  BOOST_TEST(history[1]["script_describe"].get<double>() == 3.0);
  BOOST_TEST(history[1]["script_training"].get<double>() == 0.0);

  // 1 epoch + resume + 1 epoch: the same weights, BatchNorm statistics and history.
  cfg["max_epochs"] = 1;
  r = train(cfg, "b");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = skein("train --resume " + dir("b") + " --set max_epochs=2 --plugin-dir " TEST_PLUGIN_DIR);
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = py("same_state_dict " + dir("a/checkpoints/epoch_0002/model_state_dict.pt") + " " +
         dir("b/checkpoints/epoch_0002/model_state_dict.pt"));
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(without_durations(history) == without_durations(load_json(dir("b/history.json"))));
  // skorch's History.from_file reads the resumed run's history.json.
  r = py("skorch_history " + dir("b/history.json") + " 2");
  BOOST_TEST(r.exit_code == 0, r.err);

  // predict, then the same inputs through each export in Python.
  BOOST_TEST_REQUIRE(py("inputs " + dir("in.npy") + " float32 10 1 8 8").exit_code == 0);
  r = skein("predict " + dir("a") + " --inputs " + dir("in.npy") + " --out " + dir("out.npy") + " --batch-size 3");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = skein("export " + dir("a") + " --format torchscript --out " + dir("exported.pt"));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = py("check_torchscript " + dir("exported.pt") + " " + dir("in.npy") + " " + dir("out.npy"));
  BOOST_TEST(r.exit_code == 0, r.err);
  r = skein("export " + dir("a") + " --format state_dict --out " + dir("sd.pt") + " --checkpoint epoch_0002");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = py("check_state_dict " + dir("sd.pt") + " " + model + " " + dir("in.npy") + " " + dir("out.npy"));
  BOOST_TEST(r.exit_code == 0, r.err);
}

BOOST_AUTO_TEST_CASE(torchscript_model_under_ddp) {
  auto cfg = image_config(script("classifier"));
  cfg["parallel"] = {{"plugin", "ddp"}};
  cfg["history"] = {{"plugin", "filestore"}};
  auto r = train(cfg, "ddp", "--nproc-per-node 2");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  auto run = load_json(dir("ddp/run.json"));
  BOOST_TEST(run["consistent"].get<bool>());
  BOOST_TEST(run["history_digests"].size() == 2u);
  auto history = load_json(dir("ddp/history.json"));
  BOOST_TEST(history.back()["script_describe"].get<double>() == 3.0);
  BOOST_TEST(history.back()["valid_acc"].get<double>() > 0.5);
}

BOOST_AUTO_TEST_CASE(bundled_model_exports_torchscript_by_tracing) {
  auto cfg = test::synthetic_config();
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
  cfg["model"]["dropout"] = 0.3;  // eval mode in the export
  auto r = train(cfg, "mlp");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST_REQUIRE(py("inputs " + dir("in.npy") + " float64 7 16").exit_code == 0);  // float64: converted
  r = skein("predict " + dir("mlp") + " --inputs " + dir("in.npy") + " --out " + dir("out.npy"));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = skein("export " + dir("mlp") + " --format torchscript --out " + dir("mlp.pt") + " --checkpoint best");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = py("check_torchscript " + dir("mlp.pt") + " " + dir("in.npy") + " " + dir("out.npy"));
  BOOST_TEST(r.exit_code == 0, r.err);
}

BOOST_AUTO_TEST_CASE(regression_losses_record_loss_only) {
  for (const char* loss : {"mse", "l1", "smooth_l1"}) {
    BOOST_TEST_CONTEXT(loss) {
      const std::string run = std::string("reg_") + loss;
      auto r = train(regression_config(loss), run);  // mlp outputs [N, 1], targets [N]
      BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
      auto history = load_json(dir(run + "/history.json"));
      BOOST_TEST(history.back()["train_loss"].get<double>() < history.front()["train_loss"].get<double>());
      BOOST_TEST(history.back().contains("valid_loss"));
      BOOST_TEST(!history.back().contains("valid_acc"));
      auto results = load_json(dir(run + "/results.json"));
      BOOST_TEST(results.contains("test_loss"));
      BOOST_TEST(!results.contains("test_accuracy"));
      BOOST_TEST(contains(r.out, "Test loss: "), r.out);
    }
  }
  // A TorchScript regressor too.
  auto cfg = regression_config("mse");
  cfg["model"] = {{"plugin", "torchscript"}, {"path", script("regressor")}};
  auto r = train(cfg, "reg_script");
  BOOST_TEST(r.exit_code == 0, r.err);
}

BOOST_AUTO_TEST_CASE(binary_and_nll_losses) {
  // One logit per sample against 0/1 class ids: bce_with_logits records its acc.
  auto cfg = regression_config("bce_with_logits");
  cfg["data"] = {{"plugin", "synthetic"}, {"samples", 256}, {"test_samples", 64}, {"shape", {4}}, {"classes", 2}};
  cfg["model"] = {{"plugin", "torchscript"}, {"path", script("regressor")}};
  auto r = train(cfg, "bce");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  auto last = load_json(dir("bce/history.json")).back();
  BOOST_TEST(last["valid_acc"].get<double>() > 0.6);
  BOOST_TEST(last.contains("train_acc"));
  // What the loss records for validation, the test split gets too.
  const auto results = load_json(dir("bce/results.json"));
  BOOST_TEST(results["test_accuracy"].get<double>() > 0.6, results.dump());
  BOOST_TEST(contains(r.out, "Test accuracy: "), r.out);

  cfg = test::synthetic_config();
  cfg["loss"] = {{"plugin", "nll"}};
  r = train(cfg, "nll");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST(load_json(dir("nll/history.json")).back().contains("valid_acc"));
}

BOOST_AUTO_TEST_CASE(every_optimizer_plugin_trains) {
  for (const char* name : {"sgd", "adam", "adamw", "rmsprop", "adagrad"}) {
    BOOST_TEST_CONTEXT(name) {
      auto cfg = test::synthetic_config();
      cfg["optimizer"] = {{"plugin", name}, {"lr", 0.01}};
      auto r = train(cfg, std::string("opt_") + name);
      BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
      auto history = load_json(dir(std::string("opt_") + name + "/history.json"));
      BOOST_TEST(history.back()["train_loss"].get<double>() < history.front()["train_loss"].get<double>());
      auto config = load_json(dir(std::string("opt_") + name + "/config.json"));
      BOOST_TEST(config["optimizer"]["plugin"].get<std::string>() == name);
      BOOST_TEST(config["plugin_versions"][name]["kind"].get<std::string>() == "optimizer");
    }
  }
}

BOOST_AUTO_TEST_CASE(warm_start_from_python_state_dict_and_checkpoint) {
  const std::string model = script("regressor");
  BOOST_TEST_REQUIRE(py("state_dict " + model + " " + dir("python_sd.pt")).exit_code == 0);
  auto cfg = regression_config("mse");
  cfg["model"] = {{"plugin", "torchscript"}, {"path", model}};
  cfg["init_from"] = dir("python_sd.pt");
  // A rate so small that no weight moves: the checkpoint holds what was loaded.
  cfg["optimizer"] = {{"plugin", "sgd"}, {"lr", 1e-30}};
  cfg["max_epochs"] = 1;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
  auto r = train(cfg, "warm");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = py("same_state_dict " + dir("python_sd.pt") + " " + dir("warm/checkpoints/epoch_0001/model_state_dict.pt"));
  BOOST_TEST(r.exit_code == 0, r.err);

  // From a skein checkpoint directory, and from a run directory (its newest).
  for (const std::string& source : {dir("warm/checkpoints/epoch_0001"), dir("warm")}) {
    cfg["init_from"] = source;
    const std::string run = "warm" + std::to_string(runs);
    r = train(cfg, run);
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    r = py("same_state_dict " + dir("python_sd.pt") + " " + dir(run + "/checkpoints/epoch_0001/model_state_dict.pt"));
    BOOST_TEST(r.exit_code == 0, r.err);
  }

  // Weights of another model: every kind of mismatch in one line, a few names each.
  cfg = image_config(script("classifier"));
  cfg["init_from"] = dir("python_sd.pt");
  r = train(cfg, "mismatch");
  test::expect_one_error(r, 2, {"init_from", "4 not in the model: 'net.0.weight', 'net.0.bias', 'net.2.weight' and 1 more",
                                "missing from the file: "});
}

// The files people have: PyTorch's tutorial checkpoint, a DDP model's state
// dict, a TorchScript module; a file without BatchNorm counters; init_strict.
BOOST_AUTO_TEST_CASE(warm_start_from_the_files_people_have) {
  const std::string model = script("regressor");
  BOOST_TEST_REQUIRE(py("state_dict " + model + " " + dir("sd.pt")).exit_code == 0);
  auto r = py("init_variants " + model + " " + dir("sd.pt") + " " + dir(""));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  auto cfg = script_regression_config(model);
  cfg["optimizer"] = {{"plugin", "sgd"}, {"lr", 1e-30}};  // no weight moves: the checkpoint holds what was loaded
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"tutorial", "init_from: the state dict under 'model_state_dict' of"},
      {"ddp", "init_from: removed the 'module.' prefix of 4 names"},
      {"script", "init_from: the parameters and buffers of the TorchScript module"}};
  for (const auto& [name, note] : variants) {
    cfg["init_from"] = dir(name + ".pt");
    r = train(cfg, "from_" + name);
    BOOST_TEST_REQUIRE(r.exit_code == 0, name + ": " + r.err);
    BOOST_TEST(contains(test::read_text(dir("from_" + name + "/train.log")), note), name);
    r = py("same_state_dict " + dir("sd.pt") + " " + dir("from_" + name + "/checkpoints/epoch_0001/model_state_dict.pt"));
    BOOST_TEST(r.exit_code == 0, name + ": " + r.err);
  }

  cfg["init_from"] = dir("partial.pt");
  test::expect_one_error(train(cfg, "partial"), 2,
                         {"init_from", "1 missing from the file: 'net.2.weight'", "1 not in the model: 'extra.weight'",
                          "init_strict false loads the entries that fit"});
  cfg["init_strict"] = false;
  r = train(cfg, "partial_loose");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.err, "init_strict is false: 1 missing from the file: 'net.2.weight'"), r.err);

  // BatchNorm's num_batches_tracked, absent from old files: kept, said.
  const std::string classifier = script("classifier");
  BOOST_TEST_REQUIRE(py("state_dict " + classifier + " " + dir("csd.pt")).exit_code == 0);
  std::filesystem::create_directories(dir("bn"));
  BOOST_TEST_REQUIRE(py("init_variants " + classifier + " " + dir("csd.pt") + " " + dir("bn")).exit_code == 0);
  cfg = image_config(classifier);
  cfg["init_from"] = dir("bn/no_counters.pt");
  r = train(cfg, "counters");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(test::read_text(dir("counters/train.log")), "init_from: kept 1 BatchNorm counter"));
}

BOOST_AUTO_TEST_CASE(bad_models_losses_and_commands) {
  auto cfg = image_config(dir("missing.pt"));
  test::expect_one_error(train(cfg, "bad1"), 2, {"model (plugin 'torchscript')", "no such file", "missing.pt"});

  const std::string model = script("regressor");
  BOOST_TEST_REQUIRE(py("state_dict " + model + " " + dir("sd.pt")).exit_code == 0);
  cfg = image_config(dir("sd.pt"));
  test::expect_one_error(train(cfg, "bad2"), 2, {"is not a TorchScript module", "sd.pt"});
  // Set by a flag, the path's errors name the flag, not the config file.
  test::expect_one_error(train(image_config(script("classifier")), "bad2b", "--set model.path=" + dir("sd.pt")), 2,
                         {"command line (--set model.path=", "is not a TorchScript module"});
  test::expect_one_error(train(image_config(script("classifier")), "bad2c",
                               "--set model.path=" + script("two_inputs")),
                         2, {"command line (--set model.path=", "skein calls forward(x: Tensor) -> Tensor"});

  cfg = image_config(script("two_inputs"));
  test::expect_one_error(train(cfg, "bad3"), 2, {"skein calls forward(x: Tensor) -> Tensor", "two_inputs.pt"});

  // A classifier of 4 outputs on 3 classes.
  cfg = image_config(script("classifier"));
  cfg["data"]["classes"] = 3;
  test::expect_one_error(train(cfg, "bad4"), 2, {"outputs 4 class scores", "3 classes"});

  // mse on [N, 4] class scores against [N] class ids: never broadcast.
  cfg = test::synthetic_config();
  cfg["loss"] = {{"plugin", "mse"}};
  test::expect_one_error(train(cfg, "bad5"), 2, {"loss (plugin 'mse')", "[32, 4]", "[32]"});

  // cross_entropy on float targets.
  cfg = regression_config("cross_entropy");
  test::expect_one_error(train(cfg, "bad6"), 2, {"loss (plugin 'cross_entropy')", "int64 class ids"});

  cfg = test::synthetic_config();
  cfg["optimizer"] = {{"plugin", "adam"}, {"name", "adam"}};
  test::expect_one_error(train(cfg, "bad7"), 2, {"optimizer", "\"name\" is its old spelling"});
  cfg["optimizer"] = {{"plugin", "adamm"}};
  test::expect_one_error(train(cfg, "bad8"), 2, {"did you mean 'adam'"});
  cfg["optimizer"] = {{"plugin", "rmsprop"}, {"alpha", 2}};
  test::expect_one_error(train(cfg, "bad9"), 2, {"optimizer (plugin 'rmsprop')", "alpha"});
  cfg["optimizer"] = {{"name", "sgd"}, {"lr", -1}};
  test::expect_one_error(train(cfg, "bad10"), 2, {"optimizer (plugin 'sgd'): option 'lr' must be positive"});

  // export and predict.
  cfg = test::synthetic_config();
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
  cfg["max_epochs"] = 1;
  BOOST_TEST_REQUIRE(train(cfg, "ok").exit_code == 0);
  test::expect_one_error(skein("export " + dir("ok") + " --format onnx --out " + dir("x")), 2, {"--format 'onnx'"});
  test::expect_one_error(skein("export " + dir("ok") + " --format state_dict --out " + dir("x") + " --checkpoint ../ok"), 2,
               {"--checkpoint '../ok'"});
  test::expect_one_error(skein("export " + dir("nothing") + " --format state_dict --out " + dir("x")), 2,
               {"not a run directory"});
  BOOST_TEST_REQUIRE(py("inputs " + dir("wrong.npy") + " float32 5 3").exit_code == 0);
  test::expect_one_error(skein("predict " + dir("ok") + " --inputs " + dir("wrong.npy") + " --out " + dir("y.npy")), 2,
               {"[5, 3]", "[16]"});
  BOOST_TEST(!boost::filesystem::exists(dir("x")));
  BOOST_TEST(!boost::filesystem::exists(dir("y.npy")));
}

BOOST_AUTO_TEST_CASE(torchscript_reaching_files_is_refused_before_any_of_it_runs) {
  // Each module writes its target file as soon as some of its code runs:
  // forward (in a nested block), a free function a forked method calls, a
  // submodule's __setstate__ (which torch.jit.load runs while reading).
  const std::vector<std::array<std::string, 3>> cases = {{"from_file", "FromFile.forward", "aten::from_file"},
                                                         {"save_in_forked_helper", "save_copy", "aten::save"},
                                                         {"save_in_setstate", "Tripwire.__setstate__", "aten::save"}};
  for (const auto& [kind, function, op] : cases) {
    BOOST_TEST_CONTEXT(kind) {
      const std::string target = dir(kind + ".target"), model = dir(kind + ".pt");
      test::write_text(target, "precious\n");
      BOOST_TEST_REQUIRE(py("script_touching " + kind + " " + target + " " + model).exit_code == 0);
      test::expect_one_error(train(script_regression_config(model), "run_" + kind), 2,
                             {"model (plugin 'torchscript')", model, function + " calls " + op,
                              "--allow-script-file-ops"});
      BOOST_TEST(test::read_text(target) == "precious\n");
    }
  }
  // The user may allow it, for train and for predict (which runs the module too).
  const std::string target = dir("from_file.target"), model = dir("from_file.pt");
  auto r = train(script_regression_config(model), "allowed", "--allow-script-file-ops");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST(test::read_text(target) == "AAAAious\n");
  BOOST_TEST_REQUIRE(py("inputs " + dir("in.npy") + " float32 5 4").exit_code == 0);
  const std::string predict = "predict " + dir("allowed") + " --inputs " + dir("in.npy") + " --out " + dir("out.npy");
  test::expect_one_error(skein(predict), 2, {"FromFile.forward calls aten::from_file"});
  r = skein(predict + " --allow-script-file-ops");
  BOOST_TEST(r.exit_code == 0, r.err);
}

BOOST_AUTO_TEST_CASE(torchscript_file_is_pinned_by_its_checkpoints) {
  const std::string model = script("regressor");
  auto r = train(script_regression_config(model), "pinned");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  // trainer.json records the file's SHA-256, as Python's hashlib computes it.
  auto meta = load_json(dir("pinned/checkpoints/epoch_0001/trainer.json"));
  BOOST_TEST(meta["script"]["path"].get<std::string>() == model);
  BOOST_TEST(meta["script"]["sha256"].get<std::string>() + "\n" == py("sha256 " + model).out);

  // Other code under the same name, with the same parameter names: outputs x100.
  BOOST_TEST_REQUIRE(py("script scaled " + model).exit_code == 0);
  BOOST_TEST_REQUIRE(py("inputs " + dir("in.npy") + " float32 5 4").exit_code == 0);
  // (predict and export read the final model, resume the last checkpoint: both of epoch 1)
  const std::vector<std::string> parts = {"checkpoint " + dir("pinned/checkpoints/"), model, "SHA-256",
                                          "--allow-changed-script"};
  const std::string predict = "predict " + dir("pinned") + " --inputs " + dir("in.npy") + " --out " + dir("out.npy");
  const std::string resume = "train --resume " + dir("pinned") + " --set max_epochs=2 --plugin-dir " TEST_PLUGIN_DIR;
  test::expect_one_error(skein(predict), 2, parts);
  test::expect_one_error(skein("export " + dir("pinned") + " --format torchscript --out " + dir("x.pt")), 2, parts);
  test::expect_one_error(skein(resume), 2, parts);
  BOOST_TEST(!boost::filesystem::exists(dir("out.npy")));
  BOOST_TEST(!boost::filesystem::exists(dir("x.pt")));
  BOOST_TEST(load_json(dir("pinned/history.json")).size() == 1u);

  // Accepted: a warning, and the new file is what the next checkpoint records.
  r = skein(predict + " --allow-changed-script");
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.err, "skein: warning: checkpoint "), r.err);
  r = skein(resume + " --allow-changed-script");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  meta = load_json(dir("pinned/checkpoints/epoch_0002/trainer.json"));
  BOOST_TEST(meta["script"]["sha256"].get<std::string>() + "\n" == py("sha256 " + model).out);
}

// A loss written in Python (torchscript_loss): the same history as the
// bundled loss it re-implements, on 2 processes with accumulation and a
// resume too; accuracy with classification true; a loss that is not a scalar,
// or a forward of another signature, is a clear error.
BOOST_AUTO_TEST_CASE(loss_from_python) {
  BOOST_TEST_REQUIRE(py("script_loss mse " + dir("mse_loss.pt")).exit_code == 0);
  BOOST_TEST_REQUIRE(py("script_loss cross_entropy " + dir("ce_loss.pt")).exit_code == 0);
  BOOST_TEST_REQUIRE(py("script_loss per_sample " + dir("per_sample.pt")).exit_code == 0);
  auto cfg = regression_config("mse");
  cfg["accumulate_steps"] = 2;
  cfg["history"] = {{"plugin", "filestore"}};
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
  auto r = skein("train --nproc-per-node 2 --config " + write_config(cfg) + " --run-dir " + dir("builtin"));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  cfg["loss"] = {{"plugin", "torchscript_loss"}, {"path", dir("mse_loss.pt")}};
  cfg["max_epochs"] = 2;
  r = skein("train --nproc-per-node 2 --config " + write_config(cfg) + " --run-dir " + dir("scripted"));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = skein("train --nproc-per-node 2 --resume " + dir("scripted") + " --set max_epochs=4");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  const auto builtin = load_json(dir("builtin/history.json"));
  const auto scripted = load_json(dir("scripted/history.json"));
  BOOST_TEST_REQUIRE(scripted.size() == 4u);
  for (std::size_t e = 0; e < 4; ++e)
    for (const char* key : {"train_loss", "valid_loss"})
      BOOST_TEST(scripted[e][key].get<double>() == builtin[e][key].get<double>(), boost::test_tools::tolerance(1e-6));

  auto classify = test::synthetic_config();
  auto plain = train(classify, "ce_builtin");
  BOOST_TEST_REQUIRE(plain.exit_code == 0, plain.err);
  classify["loss"] = {{"plugin", "torchscript_loss"}, {"path", dir("ce_loss.pt")}, {"classification", true}};
  r = train(classify, "ce_scripted");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  const auto a = load_json(dir("ce_builtin/history.json")), b = load_json(dir("ce_scripted/history.json"));
  BOOST_TEST(b.back()["valid_acc"].get<double>() == a.back()["valid_acc"].get<double>(), boost::test_tools::tolerance(1e-6));
  BOOST_TEST(load_json(dir("ce_scripted/results.json")).contains("test_accuracy"));

  auto unreduced = regression_config("mse");
  unreduced["loss"] = {{"plugin", "torchscript_loss"}, {"path", dir("per_sample.pt")}};
  test::expect_one_error(train(unreduced, "bad_loss"), 2, {"returned", "values; a loss returns one"});
  classify["loss"] = {{"plugin", "torchscript_loss"}, {"path", script("regressor")}};
  test::expect_one_error(train(classify, "model_as_loss"), 2,
                         {"skein calls forward(outputs: Tensor, targets: Tensor) -> Tensor"});
}

// standardize: the training split's mean and std (population) in the
// checkpoint; predict applies them before the model, and the exported
// TorchScript module includes them, for a bundled and a TorchScript model.
BOOST_AUTO_TEST_CASE(standardized_inputs_reach_predict_and_export) {
  torch::manual_seed(11);
  const auto x = torch::randn({200, 4}) * torch::tensor({1.0f, 1000.0f, 0.001f, 50.0f}) +
                 torch::tensor({0.0f, 5000.0f, 0.0f, -20.0f});
  const auto y = x.select(1, 0) + x.select(1, 1) / 1000;
  std::string csv;
  char buf[64];
  for (std::int64_t i = 0; i < x.size(0); ++i) {
    for (std::int64_t j = 0; j < 4; ++j) {
      std::snprintf(buf, sizeof buf, "%.9g,", x[i][j].item<float>());
      csv += buf;
    }
    std::snprintf(buf, sizeof buf, "%.9g\n", y[i].item<float>());
    csv += buf;
  }
  test::write_text(dir("scaled.csv"), csv);
  test::write_text(dir("scaled.npy"), skein::npy_bytes(x));
  auto cfg = regression_config("mse");
  cfg["data"] = {{"plugin", "csv"}, {"train", dir("scaled.csv")}, {"header", "no"}, {"task", "regression"}};
  cfg["standardize"] = true;
  cfg["valid_split"] = 0.0;  // the scaling is then of every row
  cfg["max_epochs"] = 2;
  const std::map<std::string, nlohmann::json> models = {
      {"mlp", {{"plugin", "mlp"}, {"hidden", {8}}}}, {"script", {{"plugin", "torchscript"}, {"path", script("regressor")}}}};
  for (const auto& [name, model] : models) {
    cfg["model"] = model;
    const std::string run = "standardized_" + name;
    auto r = train(cfg, run);
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto scaling = load_json(dir(run + "/checkpoints/final/trainer.json")).at("input_scaling");
    const auto mean = x.to(torch::kFloat64).mean(0), std = x.to(torch::kFloat64).std(0, /*unbiased=*/false);
    for (int j = 0; j < 4; ++j) {
      BOOST_TEST(scaling["mean"][j].get<double>() == mean[j].item<double>(), boost::test_tools::tolerance(1e-5));
      BOOST_TEST(scaling["std"][j].get<double>() == std[j].item<double>(), boost::test_tools::tolerance(1e-5));
    }
    // predict = the model on the scaled inputs.
    skein::core::TrainedModel trained({dir(run), "", {}});
    const auto scaled = (x - torch::tensor(scaling["mean"].get<std::vector<float>>())) /
                        torch::tensor(scaling["std"].get<std::vector<float>>());
    torch::NoGradGuard no_grad;
    BOOST_TEST(torch::allclose(trained.predict(x, 64), trained.model().forward(scaled), 1e-5, 1e-6), name);
    // The exported module scales by itself: the same outputs from the raw inputs.
    r = skein("predict " + dir(run) + " --inputs " + dir("scaled.npy") + " --out " + dir(run + "_out.npy"));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    r = skein("export " + dir(run) + " --format torchscript --out " + dir(run + ".pt"));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    r = py("check_torchscript " + dir(run + ".pt") + " " + dir("scaled.npy") + " " + dir(run + "_out.npy"));
    BOOST_TEST(r.exit_code == 0, name << ": " << r.err);
  }
}

// Issue 38: a Python user of an exported model must not need the docs to
// scale inputs as the dataset did (idx: (pixel / 255 - 0.2860) / 0.3530).
BOOST_AUTO_TEST_CASE(exports_and_predict_take_raw_inputs_scaled_as_the_dataset_did) {
  std::filesystem::create_directories(dir("mnist"));
  test::write_tiny_mnist(dir("mnist"), 64, 16, false);
  auto cfg = test::synthetic_config();
  cfg["data"] = {{"plugin", "idx"}, {"dir", dir("mnist")}};
  cfg["model"] = {{"plugin", "mlp"}, {"hidden", {8}}};
  cfg["max_epochs"] = 1;
  auto r = train(cfg, "pixels");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  torch::manual_seed(38);
  const auto raw = torch::randint(0, 256, {5, 1, 28, 28}).to(torch::kFloat32);
  test::write_text(dir("raw.npy"), skein::npy_bytes(raw));
  test::write_text(dir("scaled.npy"), skein::npy_bytes((raw / 255 - 0.2860) / 0.3530));
  // predict takes raw pixels: the outputs of the model on the scaled ones.
  const std::string run = dir("pixels");
  r = skein("predict " + run + " --inputs " + dir("raw.npy") + " --out " + dir("raw_out.npy"));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = skein("predict " + run + " --inputs " + dir("scaled.npy") + " --out " + dir("scaled_out.npy") +
            " --no-input-scaling");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  const auto from_raw = skein::read_npy(dir("raw_out.npy")), from_scaled = skein::read_npy(dir("scaled_out.npy"));
  BOOST_TEST(torch::allclose(from_raw, from_scaled, 1e-5, 1e-5), from_raw - from_scaled);
  // The exported module scales raw pixels itself, and its JSON says how.
  r = skein("export " + run + " --format torchscript --out " + dir("pixels.pt"));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = py("check_torchscript " + dir("pixels.pt") + " " + dir("raw.npy") + " " + dir("raw_out.npy"));
  BOOST_TEST(r.exit_code == 0, r.err);
  auto about = load_json(dir("pixels.pt.json"));
  BOOST_TEST(about["format"] == "torchscript");
  BOOST_TEST(about["input_shape"] == nlohmann::json({1, 28, 28}));
  BOOST_TEST(about["input_scaling_in_model"] == true);
  BOOST_TEST_REQUIRE(about["input_scaling"].size() == 1u, about.dump());
  const auto step = about["input_scaling"][0];
  BOOST_TEST(step["from"] == "dataset 'idx'");
  BOOST_TEST(step["divide_by"].get<double>() == 255.0);
  BOOST_TEST(step["mean"] == nlohmann::json({0.2860}));
  BOOST_TEST(step["std"] == nlohmann::json({0.3530}));
  // --no-input-scaling: a module of the model's own inputs; the JSON still says how to make them.
  r = skein("export " + run + " --format torchscript --no-input-scaling --out " + dir("bare.pt"));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = py("check_torchscript " + dir("bare.pt") + " " + dir("scaled.npy") + " " + dir("raw_out.npy"));
  BOOST_TEST(r.exit_code == 0, r.err);
  r = py("check_scaled_by_json " + dir("bare.pt") + " " + dir("raw.npy") + " " + dir("raw_out.npy"));
  BOOST_TEST(r.exit_code == 0, r.err);
  about = load_json(dir("bare.pt.json"));
  BOOST_TEST(about["input_scaling_in_model"] == false);
  BOOST_TEST(about["input_scaling"][0] == step);
  // A state dict holds weights only: its JSON says the scaling is the user's to do.
  r = skein("export " + run + " --format state_dict --out " + dir("weights.pt"));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  about = load_json(dir("weights.pt.json"));
  BOOST_TEST(about["format"] == "state_dict");
  BOOST_TEST(about["input_scaling_in_model"] == false);
  BOOST_TEST(about["input_scaling"][0] == step);
}

BOOST_AUTO_TEST_CASE(libtorch_errors_read_as_their_cause) {
  // Raised inside TorchScript code: the cause comes after the script's traceback.
  test::expect_one_error(train(script_regression_config(script("bad_view")), "view"), 1,
                         {"in TorchScript code: RuntimeError: invalid shape dimension -7"});
  // A failed internal assertion (a callback reads an int attribute as a
  // double): the condition, without libtorch's file, line and bug request.
  auto r = train(image_config(script("int_scale")), "assert");
  test::expect_one_error(r, 1, {"failed (a libtorch internal check)"});
  // libtorch 1.13 names the condition, 2.x says what was expected.
  BOOST_TEST((contains(r.err, "isDouble() failed") || contains(r.err, "internal check): expected double")), r.err);
  BOOST_TEST(!contains(r.err, "report a bug"), r.err);
  BOOST_TEST(!contains(r.err, "ivalue.h"), r.err);
  try {
    TORCH_INTERNAL_ASSERT(1 + 1 == 3, "the cause, ", 42);
  } catch (const c10::Error& e) {
    BOOST_TEST(skein::first_line(e.what()) == "1 + 1 == 3 failed (a libtorch internal check): the cause, 42");
  }
  BOOST_TEST(skein::first_line("\nArguments for call are not valid.\nmore") == "Arguments for call are not valid.");
}

BOOST_AUTO_TEST_CASE(npy_files_from_numpy) {
  BOOST_TEST_REQUIRE(py("npy_cases " + tmp.str()).exit_code == 0);
  const auto expected = torch::arange(12).reshape({3, 4});
  for (const char* dtype : {"float32", "float64", "uint8", "int64", "int32", "float16", "int8", "int16"}) {
    BOOST_TEST_CONTEXT(dtype) {
      const auto t = skein::read_npy(dir(std::string("ok_") + dtype + ".npy"));
      BOOST_TEST(t.sizes() == expected.sizes());
      BOOST_TEST(t.to(torch::kLong).equal(expected));
    }
  }
  BOOST_TEST(skein::read_npy(dir("ok_float64.npy")).scalar_type() == torch::kDouble);
  BOOST_TEST(skein::read_npy(dir("ok_bool.npy")).equal(expected.remainder(2).eq(0)));
  BOOST_TEST(skein::read_npy(dir("scalar.npy")).item<float>() == 3.5f);
  BOOST_TEST(skein::read_npy(dir("empty.npy")).sizes() == torch::IntArrayRef({0, 3}));
  auto error = [&](const char* file) { return test::message_of([&] { skein::read_npy(dir(file)); }); };
  BOOST_TEST(contains(error("fortran.npy"), "Fortran-ordered"));
  BOOST_TEST(contains(error("object.npy"), "object arrays"));
  BOOST_TEST(contains(error("bigendian.npy"), "big-endian"));
  BOOST_TEST(contains(error("truncated.npy"), "truncated"));
  BOOST_TEST(contains(error("truncated.npy"), "truncated.npy"));

  // Written here, read by numpy: the same values and dtype.
  for (auto dtype : {torch::kFloat, torch::kLong, torch::kByte, torch::kBool}) {
    const auto t = torch::arange(24).reshape({2, 3, 4}).remainder(5).to(dtype);
    test::write_text(dir("mine.npy"), skein::npy_bytes(t));
    BOOST_TEST(skein::read_npy(dir("mine.npy")).equal(t));
    const char* np_name = dtype == torch::kFloat ? "float32" : dtype == torch::kLong ? "int64"
                          : dtype == torch::kByte ? "uint8" : "bool";
    auto r = test::run(std::string(SKEIN_TEST_PYTHON) + " -c \"import numpy as np; a = np.load('" + dir("mine.npy") +
                       "'); assert a.dtype == np.dtype('" + np_name + "'), a.dtype; assert a.shape == (2, 3, 4); "
                       "assert (a == (np.arange(24).reshape(2, 3, 4) % 5).astype(a.dtype)).all()\"");
    BOOST_TEST(r.exit_code == 0, r.err);
  }
}

BOOST_AUTO_TEST_CASE(python_state_dicts_read_as_written) {
  // An OrderedDict with _metadata (what model.state_dict() returns), as
  // torch.save writes it; libtorch's own reader takes only plain dicts.
  const std::string model = script("classifier");
  BOOST_TEST_REQUIRE(py("state_dict " + model + " " + dir("sd.pt")).exit_code == 0);
  const auto dict = skein::core::read_state_dict(dir("sd.pt"));
  std::vector<std::string> names;
  for (const auto& [name, tensor] : dict) names.push_back(name);
  const std::vector<std::string> expected{"features.0.weight",       "features.0.bias",
                                          "features.1.weight",       "features.1.bias",
                                          "features.1.running_mean", "features.1.running_var",
                                          "features.1.num_batches_tracked", "head.weight", "head.bias"};
  BOOST_TEST(names == expected, boost::test_tools::per_element());
  BOOST_TEST(dict[0].second.sizes() == torch::IntArrayRef({4, 1, 3, 3}));
  // interop.py's values: linspace(-1, 1) * (index + 1) * 0.1 per parameter.
  BOOST_TEST(dict[0].second.flatten()[0].item<float>() == -0.1f);
  BOOST_TEST(dict[6].second.scalar_type() == torch::kLong);
  // Not a state dict: a TorchScript archive, a text file.
  BOOST_TEST(contains(test::message_of([&] { skein::core::read_state_dict(model); }), "classifier.pt"));
  test::write_text(dir("text.pt"), "hello");
  BOOST_TEST(contains(test::message_of([&] { skein::core::read_state_dict(dir("text.pt")); }),
                      "is not a file saved by torch.save"));
}

BOOST_AUTO_TEST_SUITE_END()
