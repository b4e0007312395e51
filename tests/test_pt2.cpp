#define BOOST_TEST_MODULE pt2
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <torch/torch.h>

#include "skein/errors.hpp"
#include "skein/io/exported_model.hpp"
#include "skein/io/npy.hpp"
#include "skein/io/operator_libraries.hpp"
#include "skein/skein.h"
#include "skein/torch_compat/export_schema.hpp"
#include "pt2_support.hpp"

// Programs exported from PyTorch 2 (torch.export, .pt2) trained by skein:
// parity with PyTorch eager, the CLI under one process and ddp, the export
// back to Python, and the archives refused. tests/python/pt2.py writes every
// archive at test time with the PyPI torch the build uses.

namespace {

using test::contains;
namespace fs = boost::filesystem;

struct Fixture : test::Pt2Workspace {
  Fixture() : Pt2Workspace("pt2.py") {}
};

#if SKEIN_TORCH_EXPORT_SCHEMA

using test::tensors_of;

nlohmann::json pt2_config(const std::string& model_path) {
  auto cfg = test::synthetic_config();
  cfg["model"] = {{"plugin", "pt2"}, {"path", model_path}};
  cfg["data"] = {{"plugin", "synthetic"}, {"samples", 256}, {"test_samples", 64}, {"shape", {1, 28, 28}}, {"classes", 10}};
  cfg["optimizer"] = {{"plugin", "adam"}, {"lr", 0.01}};
  cfg["max_epochs"] = 2;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
  return cfg;
}

// Trains `model` on the batches as tests/python/pt2.py's eager reference does.
void train(skein::ExportedModel& model, const std::string& batches, const std::string& optimizer) {
  auto data = tensors_of(batches);
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (optimizer == "sgd")
    opt = std::make_unique<torch::optim::SGD>(model.parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  else
    opt = std::make_unique<torch::optim::Adam>(model.parameters(), torch::optim::AdamOptions(0.01));
  model.train();
  torch::manual_seed(1234);  // pt2.py's SEED: random operators (RReLU, dropout) draw what eager drew
  for (std::int64_t s = 0; s < data["x"].size(0); ++s) {
    opt->zero_grad();
    torch::nn::functional::cross_entropy(model.forward(data["x"][s]), data["y"][s]).backward();
    opt->step();
  }
}

// Every entry of `expected` (parameters, buffers, "__eval_outputs__") equals
// the model's within 1e-5 relative.
void expect_eager_values(skein::ExportedModel& model, const std::string& expected_file, const std::string& batches) {
  auto expected = tensors_of(expected_file);
  std::map<std::string, torch::Tensor> mine;
  for (const auto& p : model.named_parameters()) mine[p.key()] = p.value();
  for (const auto& b : model.named_buffers()) mine[b.key()] = b.value();
  model.eval();
  {
    torch::NoGradGuard no_grad;
    mine["__eval_outputs__"] = model.forward(tensors_of(batches)["x"][0]);
  }
  BOOST_TEST(mine.size() == expected.size());
  for (const auto& [name, value] : expected) {
    BOOST_TEST_REQUIRE(mine.count(name), name << " is not in the model");
    test::expect_close(mine[name], value, name);
  }
}

BOOST_FIXTURE_TEST_CASE(fifty_steps_of_sgd_and_adam_equal_pytorch_eager, Fixture) {
  // The user guide lists the operators the tests ran.
  const std::string guide = test::read_text(SKEIN_SOURCE_DIR "/docs/user-guide.md");
  for (const std::string name : {"mlp", "cnn", "transformer", "modes"}) {
    auto r = py("make " + dir("") + " " + name);
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    for (const std::string optimizer : {"sgd", "adam"}) {
      BOOST_TEST_CONTEXT(name << " with " << optimizer) {
        skein::ExportedModel model(dir(name + ".pt2"), "model 'pt2'");
        for (const auto& op : model.operators()) BOOST_TEST(contains(guide, "`" + op + "`"), op << " is not in the guide's list");
        train(model, dir(name + "_batches.pt"), optimizer);
        expect_eager_values(model, dir(name + "_" + optimizer + ".pt"), dir(name + "_batches.pt"));
      }
    }
  }
}

// ddp on two processes of 8 rows each equals eager training on all 16 at
// once: one step an epoch, 50 epochs of SGD with momentum.
BOOST_FIXTURE_TEST_CASE(ddp_on_two_processes_equals_eager_with_the_global_batch, Fixture) {
  auto r = py("global " + dir(""));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  nlohmann::json cfg = {{"model", {{"plugin", "pt2"}, {"path", dir("mlp.pt2")}}},
                        {"data", {{"plugin", "npy"}, {"train_inputs", dir("x.npy")}, {"train_targets", dir("y.npy")}}},
                        {"loss", {{"plugin", "cross_entropy"}}},
                        {"optimizer", {{"plugin", "sgd"}, {"lr", 0.05}, {"momentum", 0.9}}},
                        {"parallel", {{"plugin", "ddp"}}},
                        {"batch_size", 8},
                        {"valid_split", 0},
                        {"max_epochs", 50},
                        {"callbacks", nlohmann::json::array()}};
  r = skein("train --nproc-per-node 2 --config " + write_config(cfg) + " --run-dir " + dir("ddp"));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = test::interop_py("same_state_dict " + dir("global_sgd.pt") + " " + dir("ddp/checkpoints/final/model_state_dict.pt"));
  BOOST_TEST(r.exit_code == 0, r.err);
}

// A custom operator (tests/tools/custom_op.cpp): refused in one line until
// its library is named, then trained as eagerly with its own autograd.
BOOST_FIXTURE_TEST_CASE(custom_operators_run_once_their_library_is_loaded, Fixture) {
  auto r = py("custom " + dir("") + " " SKEIN_TEST_CUSTOM_OP);
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  auto cfg = pt2_config(dir("custom.pt2"));
  cfg["data"]["shape"] = {6};
  cfg["data"]["classes"] = 3;
  cfg["max_epochs"] = 1;
  r = skein("train --config " + write_config(cfg) + " --run-dir " + dir("without"));
  test::expect_one_error(r, 2, {"operator skein_test::scaled_tanh is not in this libtorch",
                                "name its library in the pt2 model's operator_libraries"});
  cfg["model"]["operator_libraries"] = {dir("missing.so")};
  r = skein("train --config " + write_config(cfg) + " --run-dir " + dir("missing"));
  test::expect_one_error(r, 2, {"option 'operator_libraries'", "missing.so"});
  cfg["model"]["operator_libraries"] = {SKEIN_TEST_CUSTOM_OP};
  r = skein("train --config " + write_config(cfg) + " --run-dir " + dir("with"));
  BOOST_TEST(r.exit_code == 0, r.err);
  skein::load_operator_libraries({SKEIN_TEST_CUSTOM_OP}, "test", "operator_libraries");
  skein::ExportedModel model(dir("custom.pt2"), "model 'pt2'");
  train(model, dir("custom_batches.pt"), "sgd");
  expect_eager_values(model, dir("custom_sgd.pt"), dir("custom_batches.pt"));
}

// docs/pt2-operators.md is what the code says of this libtorch's operators.
BOOST_AUTO_TEST_CASE(the_operator_table_of_the_docs_is_current) {
  const std::string table = skein::ExportedModel::operator_table();
  BOOST_TEST(contains(table, "| `aten::scaled_dot_product_attention` | `dropout_p` |"));
  BOOST_TEST(contains(table, "- draws random numbers in eval mode too"));
  BOOST_TEST(contains(table, " `aten::bernoulli`, "));
  const std::string fresh = TEST_PLUGIN_DIR "/../pt2-operators.md";
  test::write_text(fresh, table);
  BOOST_TEST(test::read_text(SKEIN_SOURCE_DIR "/docs/pt2-operators.md") == table,
             "docs/pt2-operators.md is not current: cp " << fresh << " docs/pt2-operators.md");
}

BOOST_FIXTURE_TEST_CASE(dropout_follows_train_and_eval, Fixture) {
  BOOST_TEST_REQUIRE(py("make " + dir("") + " dropout").exit_code == 0);
  skein::ExportedModel model(dir("dropout.pt2"), "model 'pt2'");
  const auto x = torch::randn({64, 6});
  torch::NoGradGuard no_grad;
  model.eval();
  const auto eval_out = model.forward(x);
  BOOST_TEST(torch::equal(eval_out, model.forward(x)));
  BOOST_TEST((eval_out == 0).sum().item<int64_t>() == 0);
  model.train();
  const auto train_out = model.forward(x);
  const double zeros = (train_out == 0).to(torch::kFloat).mean().item<double>();
  BOOST_TEST(zeros > 0.3);  // p = 0.5 of 384 values
  BOOST_TEST(zeros < 0.7);
}

BOOST_FIXTURE_TEST_CASE(hostile_and_unsupported_archives_are_refused_when_loaded, Fixture) {
  auto r = py("hostile " + dir(""));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {"truncated", {"is not a .pt2 archive"}},
      {"schema", {"schema 99.", "reads schema 8.x"}},
      {"unknown_op", {"node 'linear'", "aten::not_an_operator", "is not in this libtorch"}},
      {"cond", {"node 'cond'", "control flow"}},
      {"missing", {"no such file"}},
      {"noise", {"node 'rand_like'", "aten::rand_like", "draws random numbers in eval mode too"}},
      // Crafted (an adversarial round): each was a signal or gigabytes before.
      {"floordiv", {"node 'crafted_floordiv'", "floordiv(-9223372036854775808, -1) overflows 64 bits"}},
      {"stride0", {"'net.4.bias' declares 1073741824 elements over 3 stored"}},
      {"bomb", {"'net.0.weight': its record holds 268435456 bytes where its tensor metadata needs 384"}},
      {"a_directory", {"is not a regular file (a directory)"}},
      {"a_fifo", {"is not a regular file (a FIFO)"}},
  };
  fs::create_directories(dir("a_directory.pt2"));
  BOOST_TEST_REQUIRE(::mkfifo(dir("a_fifo.pt2").c_str(), 0600) == 0);
  for (const auto& [name, parts] : cases) {
    const std::string message = test::message_of<skein::OptionError>(
        [&, file = dir(name + ".pt2")] { skein::ExportedModel model(file, "model 'pt2'"); });
    BOOST_TEST_CONTEXT(name << ": " << message) {
      BOOST_TEST(contains(message, "model 'pt2': option 'path'"));
      BOOST_TEST(message.find('\n') == std::string::npos);
      for (const auto& part : parts) BOOST_TEST(contains(message, part));
    }
  }
  // skein train says it in one line and exits 2: no signal, no resume hint.
  auto cfg = test::synthetic_config();
  cfg["model"] = {{"plugin", "pt2"}, {"path", dir("floordiv.pt2")}};
  cfg["data"] = {{"plugin", "synthetic"}, {"samples", 32}, {"shape", {6}}, {"classes", 3}};
  r = skein("train --config " + write_config(cfg) + " --run-dir " + dir("run"));
  test::expect_one_error(r, 2, {"floordiv.pt2", "overflows 64 bits"});
}

// A module exported after .eval(): trained, with one warning saying what
// its export fixed.
BOOST_FIXTURE_TEST_CASE(a_program_exported_in_eval_mode_is_named_in_one_warning, Fixture) {
  BOOST_TEST_REQUIRE(py("hostile " + dir("")).exit_code == 0);
  auto cfg = test::synthetic_config();
  for (const std::string name : {"eval_mode", "good"}) {
    cfg["model"] = {{"plugin", "pt2"}, {"path", dir(name + ".pt2")}};
    cfg["data"] = {{"plugin", "synthetic"}, {"samples", 32}, {"shape", {6}}, {"classes", name == "good" ? 3 : 6}};
    const auto r = skein("train --config " + write_config(cfg) + " --run-dir " + dir(name));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const std::string warning = "was exported in eval mode (node 'dropout' (torch.ops.aten.dropout.default) with "
                                "train=False)";
    BOOST_TEST(contains(r.err, warning) == (name == "eval_mode"), r.err);
    if (name == "eval_mode") BOOST_TEST(contains(test::read_text(dir(name + "/train.log")), warning));
  }
}

// The batch Dim's declared range holds in training and predict, as in
// torch.export's own module: one line, exit 1 (an input the run meets).
BOOST_FIXTURE_TEST_CASE(inputs_outside_the_exported_shapes_are_refused_in_one_line, Fixture) {
  BOOST_TEST_REQUIRE(py("hostile " + dir("")).exit_code == 0);  // bounded.pt2: a batch Dim of [1, 64]
  skein::ExportedModel model(dir("bounded.pt2"), "model 'pt2'");
  torch::NoGradGuard no_grad;
  BOOST_TEST(model.forward(torch::randn({64, 6})).size(0) == 64);
  BOOST_TEST(contains(test::message_of<std::invalid_argument>([&] { model.forward(torch::randn({65, 6})); }),
                      "model 'pt2': inputs of shape [65, 6] do not fit '" + dir("bounded.pt2") +
                          "': dimension 0 is 65, outside the range [1, 64] of its torch.export.Dim"));
  BOOST_TEST(contains(test::message_of<std::invalid_argument>([&] { model.forward(torch::randn({8, 7})); }),
                      "dimension 1 is 7 where it was exported with 6"));
  BOOST_TEST(contains(test::message_of<std::invalid_argument>([&] { model.forward(torch::randn({8})); }),
                      "it was exported for inputs of 2 dimensions"));
  auto cfg = pt2_config(dir("bounded.pt2"));
  cfg["data"]["shape"] = {6};
  cfg["data"]["classes"] = 3;
  cfg["batch_size"] = 100;
  cfg["max_epochs"] = 1;
  const auto r = skein("train --config " + write_config(cfg) + " --run-dir " + dir("big"));
  test::expect_one_error(r, 1, {"inputs of shape [100, 6] do not fit", "outside the range [1, 64]"});
}


// The docs' example (examples/torch_export/): exported in Python, trained on
// one process and under ddp on two, exported back and read by torch.export.load.
BOOST_FIXTURE_TEST_CASE(the_example_trains_on_one_and_two_processes_and_goes_back_to_python, Fixture) {
  auto r = test::run(std::string(SKEIN_TEST_PYTHON) + " " SKEIN_SOURCE_DIR "/examples/torch_export/export_cnn.py " +
                     dir("cnn.pt2"), 240);
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  auto cfg = pt2_config(dir("cnn.pt2"));
  r = skein("train --config " + write_config(cfg) + " --run-dir " + dir("one"));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  cfg["parallel"] = {{"plugin", "ddp"}};
  cfg["history"] = {{"plugin", "tcpstore"}};
  r = skein("train --config " + write_config(cfg) + " --run-dir " + dir("two") + " --nproc-per-node 2");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  test::write_text(dir("inputs.npy"), skein::npy_bytes(torch::randn({5, 1, 28, 28})));
  BOOST_TEST(test::load_json(dir("two/history.json")).size() == 2u);

  for (const std::string run : {"one", "two"}) {
    r = skein("export " + dir(run) + " --format pt2 --out " + dir(run + ".pt2"));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(contains(r.out, "as pt2"));
    BOOST_TEST(test::load_json(dir(run + ".pt2.json"))["input_scaling_in_model"] == false);  // nothing to scale
    r = skein("export " + dir(run) + " --format state_dict --out " + dir(run + "_sd.pt"));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    r = py("check_export " + dir(run + ".pt2") + " " + dir(run + "_sd.pt") + " " + dir("inputs.npy"));
    BOOST_TEST(r.exit_code == 0, r.err);
  }
  // A model not trained from a .pt2 has no program to write back.
  cfg = test::synthetic_config();
  BOOST_TEST_REQUIRE(skein("train --config " + write_config(cfg) + " --run-dir " + dir("mlp")).exit_code == 0);
  r = skein("export " + dir("mlp") + " --format pt2 --out " + dir("mlp.pt2"));
  test::expect_one_error(r, 2, {"--format pt2", "model 'mlp' was not trained from a .pt2"});
  BOOST_TEST(!fs::exists(dir("mlp.pt2")));
}

// The exported .pt2 takes raw inputs, scaled inside as predict scales them:
// the dataset's (idx: pixel / 255, less a mean, over a std: numbers in the
// graph) and "standardize"'s (a mean and std per pixel: lifted constants).
// Python's torch.export.load and skein's own loader both run it.
BOOST_FIXTURE_TEST_CASE(the_export_scales_raw_inputs_as_predict_does, Fixture) {
  BOOST_TEST_REQUIRE(test::run(std::string(SKEIN_TEST_PYTHON) + " " SKEIN_SOURCE_DIR
                               "/examples/torch_export/export_cnn.py " + dir("cnn.pt2"), 240).exit_code == 0);
  fs::create_directories(dir("mnist"));
  test::write_tiny_mnist(dir("mnist"), 64, 16, false);
  auto cfg = pt2_config(dir("cnn.pt2"));
  cfg["data"] = {{"plugin", "idx"}, {"dir", dir("mnist")}};
  cfg["max_epochs"] = 1;
  torch::manual_seed(38);
  test::write_text(dir("raw.npy"), skein::npy_bytes(torch::randint(0, 256, {5, 1, 28, 28}).to(torch::kFloat32)));
  for (const bool standardize : {false, true}) {
    BOOST_TEST_CONTEXT("standardize " << standardize) {
      cfg["standardize"] = standardize;
      const std::string run = dir(standardize ? "std" : "pixels");
      auto r = skein("train --config " + write_config(cfg) + " --run-dir " + run);
      BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
      r = skein("export " + run + " --format pt2 --out " + run + ".pt2");
      BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
      BOOST_TEST(test::load_json(run + ".pt2.json")["input_scaling_in_model"] == true);
      BOOST_TEST(test::load_json(run + ".pt2.json")["input_scaling"].size() == (standardize ? 2u : 1u));
      r = skein("predict " + run + " --inputs " + dir("raw.npy") + " --out " + run + "_out.npy");
      BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
      r = py("check_outputs " + run + ".pt2 " + dir("raw.npy") + " " + run + "_out.npy");
      BOOST_TEST(r.exit_code == 0, r.err);
      skein::ExportedModel again(run + ".pt2", "model 'pt2'");
      again.eval();
      torch::NoGradGuard no_grad;
      const auto out = again.forward(skein::read_npy(dir("raw.npy")));
      BOOST_TEST(torch::allclose(out, skein::read_npy(run + "_out.npy"), 1e-4, 1e-4));
    }
  }
}

// init_from reads a .pt2's parameters and buffers (torch.export.save's, or
// skein export's): a rate too small to move any weight keeps them as loaded.
BOOST_FIXTURE_TEST_CASE(init_from_reads_the_weights_of_a_pt2, Fixture) {
  BOOST_TEST_REQUIRE(py("make " + dir("") + " mlp").exit_code == 0);
  auto cfg = pt2_config(dir("mlp.pt2"));
  cfg["data"]["shape"] = {6};
  cfg["data"]["classes"] = 3;
  cfg["max_epochs"] = 1;
  BOOST_TEST_REQUIRE(skein("train --config " + write_config(cfg) + " --run-dir " + dir("a")).exit_code == 0);
  BOOST_TEST_REQUIRE(skein("export " + dir("a") + " --format pt2 --out " + dir("a.pt2")).exit_code == 0);
  BOOST_TEST_REQUIRE(skein("export " + dir("a") + " --format state_dict --out " + dir("a_sd.pt")).exit_code == 0);
  cfg["init_from"] = dir("a.pt2");
  cfg["optimizer"] = {{"plugin", "sgd"}, {"lr", 1e-30}};
  auto r = skein("train --config " + write_config(cfg) + " --run-dir " + dir("b"));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(test::read_text(dir("b/train.log")), "the exported program " + dir("a.pt2")));
  r = test::interop_py("same_state_dict " + dir("a_sd.pt") + " " + dir("b/checkpoints/epoch_0001/model_state_dict.pt"));
  BOOST_TEST(r.exit_code == 0, r.err);
}

// zero (stage 2), gradient clipping and bf16 autocast take the program as
// any model; a kill -9 inside an epoch under ddp resumes to the same bits.
BOOST_FIXTURE_TEST_CASE(zero_clipping_autocast_and_a_mid_epoch_resume_under_ddp, Fixture) {
  BOOST_TEST_REQUIRE(py("make " + dir("") + " cnn").exit_code == 0);
  auto cfg = pt2_config(dir("cnn.pt2"));
  cfg["data"]["shape"] = {1, 8, 8};
  cfg["data"]["classes"] = 3;
  cfg["parallel"] = {{"plugin", "zero"}, {"stage", 2}};
  cfg["precision"] = "bf16-mixed";
  cfg["callbacks"] = {{{"plugin", "grad_clip"}, {"max_norm", 0.5}}};
  auto r = skein("train --config " + write_config(cfg) + " --run-dir " + dir("zero") + " --nproc-per-node 2");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST(test::load_json(dir("zero/history.json")).size() == 2u);

  cfg = pt2_config(dir("cnn.pt2"));
  cfg["data"]["shape"] = {1, 8, 8};
  cfg["data"]["classes"] = 3;
  cfg["max_epochs"] = 3;
  cfg["parallel"] = {{"plugin", "ddp"}};
  cfg["history"] = {{"plugin", "filestore"}};
  cfg["callbacks"] = {{{"plugin", "checkpoint"}, {"every_n_steps", 2}}};
  const std::string two = "--nproc-per-node 2 --timeout 60 --config " + write_config(cfg) + " --run-dir ";
  BOOST_TEST_REQUIRE(skein("train " + two + dir("straight")).exit_code == 0);
  // 192 training rows, 32 a batch: 3 batches a rank; rank 1 killed as epoch 2's 3rd begins.
  r = skein("train " + two + dir("killed") + " --plugin-dir " TEST_PLUGIN_DIR +
            " --plugin probe_callback:signal_at=2,signal=9,signal_batch=2,signal_rank=1");
  BOOST_TEST(r.exit_code != 0);
  BOOST_TEST_REQUIRE(fs::exists(dir("killed/checkpoints/step_00000004/open_epoch.json")));
  r = skein("train --nproc-per-node 2 --timeout 60 --resume " + dir("killed") + " --plugin-dir " TEST_PLUGIN_DIR +
            " --plugin probe_callback:signal_at=0");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST(contains(r.out, "Resumed from " + dir("killed/checkpoints/step_00000004")), r.out);
  BOOST_TEST(test::read_text(dir("straight/checkpoints/final/model_state_dict.pt")) ==
             test::read_text(dir("killed/checkpoints/final/model_state_dict.pt")));
}

// A C program trains an exported program in-process: the session's config
// names the .pt2 as skein train's does.
BOOST_FIXTURE_TEST_CASE(a_c_session_trains_an_exported_program, Fixture) {
  BOOST_TEST_REQUIRE(py("make " + dir("") + " mlp").exit_code == 0);
  const std::string config = nlohmann::json{{"model", {{"plugin", "pt2"}, {"path", dir("mlp.pt2")}}},
                                            {"data_info", {{"input_shape", {6}}, {"num_classes", 3}}},
                                            {"loss", {{"plugin", "mse"}}},
                                            {"optimizer", {{"plugin", "sgd"}, {"lr", 0.1}}},
                                            {"callbacks", nlohmann::json::array()}}
                                 .dump();
  const std::string options = nlohmann::json{{"run_dir", dir("c")}, {"echo_log", false}}.dump();
  skein_session* s = nullptr;
  BOOST_TEST_REQUIRE(skein_session_create(config.c_str(), options.c_str(), &s) == SKEIN_OK, skein_last_error(nullptr));
  float x[4][6], y[4][3];
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 6; ++j) x[i][j] = static_cast<float>((i + 1) * (j - 2)) / 10.0f;
    for (int j = 0; j < 3; ++j) y[i][j] = j == i % 3 ? 1.0f : 0.0f;
  }
  const int64_t x_shape[2] = {4, 6}, y_shape[2] = {4, 3};
  skein_tensor in{&x[0][0], 2, x_shape, SKEIN_FLOAT32, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
  skein_tensor targets{&y[0][0], 2, y_shape, SKEIN_FLOAT32, SKEIN_ROW_MAJOR, SKEIN_DEVICE_HOST, 0};
  double first = 0, loss = 0;
  BOOST_TEST_REQUIRE(skein_train_step(s, &in, &targets, &first) == SKEIN_OK, skein_last_error(s));
  for (int step = 0; step < 20; ++step) BOOST_TEST_REQUIRE(skein_train_step(s, &in, &targets, &loss) == SKEIN_OK);
  BOOST_TEST(loss < first * 0.9, loss << " after " << first);
  BOOST_TEST(skein_session_destroy(s) == SKEIN_OK);
}

#else

BOOST_FIXTURE_TEST_CASE(pt2_needs_libtorch_2, Fixture) {
  test::write_text(dir("m.pt2"), "not read");
  const std::string message = test::message_of<skein::OptionError>(
      [&] { skein::ExportedModel model(dir("m.pt2"), "model 'pt2'"); });
  BOOST_TEST(contains(message, "needs a libtorch that ships torch.export's program schema"), message);
}

#endif

}  // namespace
