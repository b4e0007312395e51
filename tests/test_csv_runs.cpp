#define BOOST_TEST_MODULE csv_runs
#include <boost/test/unit_test.hpp>

#include <cstdio>

#include <torch/torch.h>

#include "skein/dataset.hpp"
#include "skein/testing.hpp"
#include "test_support.hpp"

// The csv dataset in `skein train` runs: exit codes of its errors, the
// regression and binary tasks with their losses, and the same history as
// the same data read as IDX. (The plugin alone: plugins/dataset/csv.)

namespace {

using test::contains;
const std::string kSkein = SKEIN_EXE;

struct Fixture {
  // The csv dataset as `skein train` creates it.
  std::shared_ptr<skein::Dataset> open(const nlohmann::json& options) {
    return harness.create<skein::Dataset>("csv", options);
  }
  // Writes `text` to tmp/NAME; returns the path.
  std::string file(const std::string& name, const std::string& text) { return tmp.write(name, text); }

  skein::testing::Harness harness;
  test::TempDir tmp;
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(csv_runs, Fixture)

BOOST_AUTO_TEST_CASE(skein_train_exit_codes) {
  test::Workspace ws;
  auto cfg = test::synthetic_config();
  cfg["max_epochs"] = 1;
  auto train = [&](const nlohmann::json& data) {
    cfg["data"] = data;
    return test::run(test::in_private_network(kSkein + " train --config " + ws.write_config(cfg) + " --run-dir " +
                                              ws.dir("run" + std::to_string(ws.runs))));
  };
  auto r = train({{"plugin", "csv"}, {"train", tmp.str("missing.csv")}});
  BOOST_TEST(r.exit_code == 2, r.err);
  BOOST_TEST(test::one_error_line(r), r.err);
  BOOST_TEST(contains(r.err, "data (plugin 'csv'): option 'train': cannot read"), r.err);
  r = train({{"plugin", "csv"}, {"train", file("bad.csv", "a,b,label\n1,2,x\n3,oops,y\n")}});
  BOOST_TEST(r.exit_code == 1, r.err);
  BOOST_TEST(test::one_error_line(r), r.err);
  BOOST_TEST(contains(r.err, "bad.csv:3: column 2 ('b'): 'oops' is not a number"), r.err);
}

BOOST_AUTO_TEST_CASE(regression_trains_with_mse) {
  // y = x1 - 2 x2: learnable by the mlp's one output per sample.
  std::string text = "x1,x2,y\n";
  for (int i = 0; i < 64; ++i) {
    const double x1 = (i % 8) / 8.0, x2 = (i / 8) / 8.0;
    text += std::to_string(x1) + "," + std::to_string(x2) + "," + std::to_string(x1 - 2 * x2) + "\n";
  }
  auto cfg = test::synthetic_config();
  cfg["data"] = {{"plugin", "csv"}, {"train", file("r.csv", text)}, {"task", "regression"}};
  cfg["loss"] = {{"plugin", "mse"}};
  test::Workspace ws;
  const auto r = test::run(test::in_private_network(kSkein + " train --config " + ws.write_config(cfg) +
                                                    " --run-dir " + ws.dir("run")));
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto history = test::load_json(ws.dir("run") + "/history.json");
  BOOST_REQUIRE(history.size() == 3u);
  BOOST_TEST(!history[0].contains("valid_acc"));  // a regression loss records no accuracy
  BOOST_TEST(history.back()["valid_loss"].get<double>() < history.front()["valid_loss"].get<double>());
  BOOST_TEST(!boost::filesystem::exists(ws.dir("run") + "/csv_classes.json"));
}

// task binary with bce_with_logits trains and records accuracy for
// validation and test, as a classification does.
BOOST_AUTO_TEST_CASE(binary_trains_with_bce_with_logits_and_records_accuracy) {
  std::string text = "x1,x2,label\n", test_text = text;
  for (int i = 0; i < 96; ++i) {
    const double x1 = (i % 12) / 12.0, x2 = (i / 12) / 8.0;
    (i % 4 == 3 ? test_text : text) +=
        std::to_string(x1) + "," + std::to_string(x2) + "," + (x1 + x2 > 1 ? "spam" : "ham") + "\n";
  }
  auto cfg = test::synthetic_config();
  cfg["data"] = {{"plugin", "csv"}, {"train", file("b.csv", text)}, {"test", file("bt.csv", test_text)},
                 {"task", "binary"}};
  cfg["loss"] = {{"plugin", "bce_with_logits"}};
  test::Workspace ws;
  const auto r = test::run(test::in_private_network(kSkein + " train --config " + ws.write_config(cfg) +
                                                    " --run-dir " + ws.dir("run")));
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto history = test::load_json(ws.dir("run") + "/history.json");
  BOOST_TEST(history.back().contains("valid_acc"));
  BOOST_TEST(test::load_json(ws.dir("run") + "/results.json").contains("test_accuracy"));
  BOOST_TEST(test::load_json(ws.dir("run") + "/csv_classes.json")["classes"] == nlohmann::json({"ham", "spam"}));
  // The default loss (cross_entropy) is told what binary targets need.
  cfg.erase("loss");
  const auto wrong = test::run(test::in_private_network(kSkein + " train --config " + ws.write_config(cfg) +
                                                        " --run-dir " + ws.dir("run2")));
  BOOST_TEST(wrong.exit_code == 2);
  BOOST_TEST(contains(wrong.err, "bce_with_logits"), wrong.err);
}

// The same tiny MNIST as IDX and as CSV (pixel / 255 printed exactly) trains
// to the same history.
BOOST_AUTO_TEST_CASE(round_trip_with_idx) {
  test::write_tiny_mnist(tmp.str(), 120, 40, false);
  auto idx = harness.create<skein::Dataset>("idx", {{"dir", tmp.str()}, {"mean", 0}, {"std", 1}});
  auto write_csv = [&](const skein::TensorSplit& split, const std::string& name) {
    std::string text;
    for (int i = 0; i < 784; ++i) text += "p" + std::to_string(i) + ",";
    text += "label\n";
    const auto inputs = split.inputs.reshape({split.size(), 784}).contiguous();
    const float* pixels = inputs.data_ptr<float>();
    char number[32];
    for (std::int64_t r = 0; r < split.size(); ++r) {
      for (int i = 0; i < 784; ++i) {
        std::snprintf(number, sizeof number, "%.9g,", static_cast<double>(pixels[r * 784 + i]));
        text += number;
      }
      text += std::to_string(split.targets[r].item<std::int64_t>()) + "\n";
    }
    return file(name, text);
  };
  const auto train_csv = write_csv(idx->train(), "train.csv");
  const auto test_csv = write_csv(*idx->test(), "test.csv");
  // The CSV reads back to exactly the IDX tensors.
  auto csv = open({{"train", train_csv}, {"test", test_csv}});
  BOOST_TEST(torch::equal(csv->train().inputs, idx->train().inputs.reshape({120, 784})));
  BOOST_TEST(torch::equal(csv->train().targets, idx->train().targets));
  BOOST_TEST(torch::equal(csv->test()->inputs, idx->test()->inputs.reshape({40, 784})));

  test::Workspace ws;
  auto run = [&](const nlohmann::json& data, const std::string& name) {
    auto cfg = test::synthetic_config();
    cfg["data"] = data;
    const auto r = test::run(test::in_private_network(kSkein + " train --config " + ws.write_config(cfg) +
                                                      " --run-dir " + ws.dir(name)));
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return ws.dir(name);
  };
  const auto idx_run = run({{"plugin", "idx"}, {"dir", tmp.str()}, {"mean", 0}, {"std", 1}}, "idx");
  const auto csv_run = run({{"plugin", "csv"}, {"train", train_csv}, {"test", test_csv}, {"header", "yes"}}, "csv");
  // Durations differ from run to run; everything else must match.
  auto without_durations = [](nlohmann::json epochs) {
    for (auto& e : epochs)
      for (const char* k : {"dur", "train_dur", "valid_dur", "samples_per_s"}) e.erase(k);
    return epochs;
  };
  const auto idx_history = test::load_json(idx_run + "/history.json");
  BOOST_TEST(idx_history.size() == 3u);
  BOOST_TEST(without_durations(idx_history) == without_durations(test::load_json(csv_run + "/history.json")));
  const auto idx_results = test::load_json(idx_run + "/results.json");
  const auto csv_results = test::load_json(csv_run + "/results.json");
  for (const char* key : {"test_accuracy", "test_loss", "test_samples"})
    BOOST_TEST(idx_results.at(key) == csv_results.at(key), key);
  BOOST_TEST(test::load_json(csv_run + "/csv_classes.json")["classes"] ==
             nlohmann::json::parse(R"(["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"])"));
}

BOOST_AUTO_TEST_SUITE_END()
