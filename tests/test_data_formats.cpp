#define BOOST_TEST_MODULE data_formats
#include <boost/test/unit_test.hpp>

#include <stb/stb_image_write.h>
#include <torch/torch.h>

#include "skein/io/npy.hpp"
#include "test_support.hpp"

// The same data as IDX, .npy, Python-saved tensors and a folder of PNG
// images: identical training histories with the same seed. Streaming
// (image_folder) is deterministic whatever the prefetch threads, resumes
// bit-exactly and runs under ddp; bad files fail with one line.

namespace fs = boost::filesystem;

namespace {

using test::contains;
using test::load_json;
const std::string kSkein = SKEIN_EXE;
constexpr int kSide = 8;
constexpr int kClasses = 3;
constexpr double kMean = 0.25, kStd = 0.5;

// n gray 8x8 images of 3 classes, class-major (the order an image folder
// lists them in): a bright row whose position depends on the class, plus noise.
struct Images {
  std::vector<std::uint8_t> pixels;
  std::vector<std::uint8_t> labels;
};
Images make_images(int n, unsigned seed) {
  Images d;
  d.pixels.resize(static_cast<std::size_t>(n) * kSide * kSide);
  std::uint32_t state = seed;
  for (int i = 0; i < n; ++i) {
    const auto label = static_cast<std::uint8_t>(i * kClasses / n);
    d.labels.push_back(label);
    for (int p = 0; p < kSide * kSide; ++p) {
      state = state * 1664525u + 1013904223u;
      const bool bar = p / kSide == 2 * label + 1;
      d.pixels[static_cast<std::size_t>(i) * kSide * kSide + p] = static_cast<std::uint8_t>(bar ? 200 + (state >> 29) : state >> 26);
    }
  }
  return d;
}

// Inputs as the idx dataset makes them: [N, 1, 8, 8], x / 255, then (x - mean) / std.
torch::Tensor normalized(const Images& d) {
  const auto n = static_cast<std::int64_t>(d.labels.size());
  return torch::from_blob(const_cast<std::uint8_t*>(d.pixels.data()), {n * kSide * kSide}, torch::kUInt8)
      .to(torch::kFloat32)
      .div_(255.0)
      .sub_(kMean)
      .div_(kStd)
      .reshape({n, 1, kSide, kSide});
}
torch::Tensor labels_of(const Images& d) {
  return torch::from_blob(const_cast<std::uint8_t*>(d.labels.data()), {static_cast<std::int64_t>(d.labels.size())},
                          torch::kUInt8)
      .to(torch::kLong);
}

struct Fixture : test::Workspace {
  Images train_images = make_images(240, 1), test_images = make_images(60, 2);

  test::CommandResult py(const std::string& args) { return test::interop_py(args); }
  test::CommandResult train(const nlohmann::json& cfg, const std::string& run_dir, const std::string& more = "") {
    return test::run(test::in_private_network(kSkein + " train --config " + write_config(cfg) + " --run-dir " +
                                              dir(run_dir) + " " + more),
                     300);
  }
  nlohmann::json config(const nlohmann::json& data) const {
    auto cfg = test::synthetic_config();
    cfg["data"] = data;
    cfg["model"] = {{"plugin", "mlp"}, {"hidden", {16}}};
    cfg["max_epochs"] = 2;
    return cfg;
  }
  void write_idx_files() const {
    const auto n = static_cast<std::uint32_t>(train_images.labels.size());
    const auto m = static_cast<std::uint32_t>(test_images.labels.size());
    fs::create_directories(dir("idx"));
    test::write_idx(dir("idx/train-images-idx3-ubyte"), {n, kSide, kSide}, train_images.pixels, false);
    test::write_idx(dir("idx/train-labels-idx1-ubyte"), {n}, train_images.labels, false);
    test::write_idx(dir("idx/t10k-images-idx3-ubyte"), {m, kSide, kSide}, test_images.pixels, false);
    test::write_idx(dir("idx/t10k-labels-idx1-ubyte"), {m}, test_images.labels, false);
  }
  void write_png_folder(const std::string& root, const Images& d) const {
    for (std::size_t i = 0; i < d.labels.size(); ++i) {
      const std::string cls = root + "/class" + std::to_string(d.labels[i]);
      fs::create_directories(cls);
      char name[32];
      std::snprintf(name, sizeof name, "/%05zu.png", i);
      BOOST_TEST_REQUIRE(stbi_write_png((cls + name).c_str(), kSide, kSide, 1, &d.pixels[i * kSide * kSide], kSide) != 0);
    }
  }
  // SPLIT_x.npy and SPLIT_y.npy written here; SPLIT.pt by Python from those arrays.
  void write_arrays(const std::string& split, const Images& d) {
    test::write_text(dir(split + "_x.npy"), skein::npy_bytes(normalized(d)));
    test::write_text(dir(split + "_y.npy"), skein::npy_bytes(labels_of(d)));
    auto r = py("tensors_file " + dir(split + "_x.npy") + " " + dir(split + "_y.npy") + " " + dir(split + ".pt"));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  }
  nlohmann::json idx_data() const {
    return {{"plugin", "idx"}, {"dir", dir("idx")}, {"mean", kMean}, {"std", kStd}};
  }
  nlohmann::json folder_data() const {
    return {{"plugin", "image_folder"}, {"root", dir("png/train")}, {"test_root", dir("png/test")},
            {"mean", {kMean}}, {"std", {kStd}}};
  }
};

nlohmann::json without_durations(nlohmann::json epochs) {
  for (auto& e : epochs) e.erase("dur");
  return epochs;
}


}  // namespace

BOOST_FIXTURE_TEST_SUITE(data_formats, Fixture)

BOOST_AUTO_TEST_CASE(every_format_gives_the_same_history) {
  write_idx_files();
  write_png_folder(dir("png/train"), train_images);
  write_png_folder(dir("png/test"), test_images);
  write_arrays("train", train_images);
  write_arrays("test", test_images);
  const std::map<std::string, nlohmann::json> formats = {
      {"idx", idx_data()},
      {"npy", {{"plugin", "npy"}, {"train_inputs", dir("train_x.npy")}, {"train_targets", dir("train_y.npy")},
               {"test_inputs", dir("test_x.npy")}, {"test_targets", dir("test_y.npy")}}},
      {"tensors", {{"plugin", "tensors"}, {"train", dir("train.pt")}, {"test", dir("test.pt")}}},
      {"image_folder", folder_data()}};
  std::map<std::string, nlohmann::json> histories, results;
  for (const auto& [name, data] : formats) {
    // A conv net: its kernels depend on the inputs' memory layout, not only
    // their values (an image_folder batch once had channels-last strides).
    auto cfg = config(data);
    cfg["model"] = {{"plugin", "cnn"}, {"channels", {4}}, {"hidden", 16}, {"dropout", 0.0}};
    auto r = train(cfg, "run_" + name);
    BOOST_TEST_REQUIRE(r.exit_code == 0, name << ": " << r.err);
    histories[name] = without_durations(load_json(dir("run_" + name + "/history.json")));
    results[name] = load_json(dir("run_" + name + "/results.json"));
  }
  BOOST_TEST(histories["idx"].size() == 2u);
  BOOST_TEST(histories["idx"].back()["valid_acc"].get<double>() > 0.5);
  for (const auto& [name, h] : histories) {
    BOOST_TEST(h == histories["idx"], name << " differs from idx");
    BOOST_TEST(results[name]["test_accuracy"] == results["idx"]["test_accuracy"], name);
  }
}

// Validation files of one's own (npy valid_inputs/valid_targets, tensors
// valid, image_folder valid_root, csv valid) replace valid_split: every
// training sample trains, the named samples validate, and every format gives
// the same history. valid_stratified splits per class.
BOOST_AUTO_TEST_CASE(validation_files_replace_valid_split) {
  write_png_folder(dir("png/train"), train_images);
  write_png_folder(dir("png/valid"), test_images);
  write_arrays("train", train_images);
  write_arrays("valid", test_images);
  // CSV: the 64 normalized pixels and the class, written with every digit a float needs.
  auto write_csv = [&](const std::string& path, const Images& d) {
    const auto x = normalized(d).reshape({static_cast<std::int64_t>(d.labels.size()), -1}).contiguous();
    std::string text;
    char buf[32];
    for (std::int64_t i = 0; i < x.size(0); ++i) {
      for (std::int64_t j = 0; j < x.size(1); ++j) {
        std::snprintf(buf, sizeof buf, "%.9g,", x[i][j].item<float>());
        text += buf;
      }
      text += "c" + std::to_string(d.labels[static_cast<std::size_t>(i)]) + "\n";
    }
    test::write_text(path, text);
  };
  write_csv(dir("train.csv"), train_images);
  write_csv(dir("valid.csv"), test_images);
  const std::map<std::string, nlohmann::json> formats = {
      {"npy", {{"plugin", "npy"}, {"train_inputs", dir("train_x.npy")}, {"train_targets", dir("train_y.npy")},
               {"valid_inputs", dir("valid_x.npy")}, {"valid_targets", dir("valid_y.npy")}}},
      {"tensors", {{"plugin", "tensors"}, {"train", dir("train.pt")}, {"valid", dir("valid.pt")}}},
      {"csv", {{"plugin", "csv"}, {"train", dir("train.csv")}, {"valid", dir("valid.csv")}, {"header", "no"}}},
      {"image_folder", {{"plugin", "image_folder"}, {"root", dir("png/train")}, {"valid_root", dir("png/valid")},
                        {"mean", {kMean}}, {"std", {kStd}}}}};
  std::map<std::string, nlohmann::json> histories;
  for (const auto& [name, data] : formats) {
    auto r = train(config(data), "own_" + name);
    BOOST_TEST_REQUIRE(r.exit_code == 0, name << ": " << r.err);
    histories[name] = without_durations(load_json(dir("own_" + name + "/history.json")));
    double trained = 0, validated = 0;
    for (const auto& row : histories[name][0]["batches"]) {
      trained += row.value("train_batch_size", 0.0);
      validated += row.value("valid_batch_size", 0.0);
    }
    BOOST_TEST(trained == 240.0, name);
    BOOST_TEST(validated == 60.0, name);
  }
  for (const auto& [name, h] : histories) {
    const auto& npy = histories["npy"];
    BOOST_TEST_REQUIRE(h.size() == npy.size(), name);
    for (std::size_t e = 0; e < h.size(); ++e)
      for (const char* key : {"train_loss", "valid_loss", "valid_acc"})
        BOOST_TEST(h[e][key].get<double>() == npy[e][key].get<double>(), boost::test_tools::tolerance(1e-5)
                   << name << " " << key << " epoch " << e + 1);
  }
  // A validation file unlike the training samples is refused.
  auto odd = formats.at("npy");
  odd["valid_inputs"] = dir("odd_x.npy");
  test::write_text(dir("odd_x.npy"), skein::npy_bytes(torch::zeros({60, 3})));
  test::expect_one_error(train(config(odd), "odd"), 1,
                         {"odd_x.npy", "validation samples have shape [3], training samples [1, 8, 8]"});

  // valid_stratified in a run (the split itself: test_training); a streaming
  // dataset's targets are not in memory.
  write_png_folder(dir("png/test"), test_images);
  auto cfg = config({{"plugin", "npy"}, {"train_inputs", dir("train_x.npy")}, {"train_targets", dir("train_y.npy")}});
  cfg["data"] = {{"plugin", "tensors"}, {"train", dir("train.pt")}};
  cfg["valid_stratified"] = true;
  auto r = train(cfg, "stratified");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  const auto stratified = load_json(dir("stratified/history.json"));
  double validated = 0;
  for (const auto& row : stratified[0]["batches"]) validated += row.value("valid_batch_size", 0.0);
  BOOST_TEST(validated == 60.0);  // valid_split 0.25: 20 of each class
  cfg["data"] = folder_data();
  test::expect_one_error(train(cfg, "stratified_stream"), 2, {"valid_stratified", "streams its samples"});
}

BOOST_AUTO_TEST_CASE(streaming_is_deterministic_resumes_and_runs_under_ddp) {
  write_png_folder(dir("png/train"), train_images);
  write_png_folder(dir("png/test"), test_images);
  auto data = folder_data();
  data["flip"] = true;  // random augmentation, seeded per batch
  auto cfg = config(data);
  cfg["max_epochs"] = 4;
  cfg["callbacks"] = {{{"plugin", "checkpoint"}}};
  // Prefetch threads change nothing but speed.
  cfg["data_workers"] = 0;
  BOOST_TEST_REQUIRE(train(cfg, "sync").exit_code == 0);
  cfg["data_workers"] = 3;
  auto r = train(cfg, "async");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  const auto straight = without_durations(load_json(dir("async/history.json")));
  BOOST_TEST(straight == without_durations(load_json(dir("sync/history.json"))));
  // 2 epochs + resume + 2 epochs: the same flips, the same history and weights.
  cfg["max_epochs"] = 2;
  BOOST_TEST_REQUIRE(train(cfg, "half").exit_code == 0);
  r = test::run(test::in_private_network(kSkein + " train --resume " + dir("half") + " --set max_epochs=4"), 300);
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST(straight == without_durations(load_json(dir("half/history.json"))));
  r = py("same_state_dict " + dir("async/checkpoints/epoch_0004/model_state_dict.pt") + " " +
         dir("half/checkpoints/epoch_0004/model_state_dict.pt"));
  BOOST_TEST(r.exit_code == 0, r.err);
  // Two processes, each reading its own shard.
  cfg["max_epochs"] = 2;
  cfg["parallel"] = {{"plugin", "ddp"}};
  cfg["history"] = {{"plugin", "filestore"}};
  r = train(cfg, "ddp", "--nproc-per-node 2");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST(load_json(dir("ddp/run.json"))["consistent"].get<bool>());
  BOOST_TEST(load_json(dir("ddp/results.json"))["test_samples"].get<int>() == 60);
}

BOOST_AUTO_TEST_CASE(numpy_arrays_of_any_dtype) {
  // uint8 inputs and int64 targets straight from numpy; float targets: regression.
  auto r = py("inputs " + dir("x.npy") + " float64 100 4");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  r = py("labels " + dir("y.npy") + " 100 3");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  auto cfg = config({{"plugin", "npy"}, {"train_inputs", dir("x.npy")}, {"train_targets", dir("y.npy")}});
  r = train(cfg, "npy_cls");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST(load_json(dir("npy_cls/history.json")).back().contains("valid_acc"));
  r = py("inputs " + dir("t.npy") + " float32 100");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  cfg["data"]["train_targets"] = dir("t.npy");
  cfg["loss"] = {{"plugin", "mse"}};
  r = train(cfg, "npy_reg");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST(!load_json(dir("npy_reg/history.json")).back().contains("valid_acc"));
}

BOOST_AUTO_TEST_CASE(bad_files_fail_with_one_line) {
  BOOST_TEST_REQUIRE(py("npy_cases " + tmp.str()).exit_code == 0);
  auto npy = [&](const std::string& x, const std::string& y) {
    return config({{"plugin", "npy"}, {"train_inputs", dir(x)}, {"train_targets", dir(y)}});
  };
  test::expect_one_error(train(npy("fortran.npy", "ok_int64.npy"), "b1"), 1, {"fortran.npy", "Fortran-ordered"});
  test::expect_one_error(train(npy("object.npy", "ok_int64.npy"), "b2"), 1, {"object.npy", "object arrays"});
  test::expect_one_error(train(npy("truncated.npy", "ok_int64.npy"), "b3"), 1, {"truncated.npy", "truncated"});
  test::expect_one_error(train(npy("ok_float32.npy", "empty.npy"), "b4"), 1, {"ok_float32.npy holds 3 samples", "empty.npy holds 0"});
  test::expect_one_error(train(npy("missing.npy", "ok_int64.npy"), "b5"), 2, {"data (plugin 'npy')", "missing.npy"});

  test::write_text(dir("not_a_dict.pt"), "garbage");
  test::expect_one_error(train(config({{"plugin", "tensors"}, {"train", dir("not_a_dict.pt")}}), "b6"), 1,
               {"not_a_dict.pt", "not a file saved by torch.save"});

  fs::create_directories(dir("empty_root"));
  test::expect_one_error(train(config({{"plugin", "image_folder"}, {"root", dir("empty_root")}}), "b7"), 2,
               {"data (plugin 'image_folder')", "no class folders"});
  // A damaged image is found when its batch is read: exit 1, the file named;
  // what the run wrote so far stays.
  write_png_folder(dir("png/train"), train_images);
  test::write_text(dir("png/train/class1/00100.png"), "not a png");
  auto r = train(config({{"plugin", "image_folder"}, {"root", dir("png/train")}}), "b8");
  test::expect_one_error(r, 1, {"00100.png", "cannot decode"});
  BOOST_TEST(fs::exists(dir("b8/config.json")));
  BOOST_TEST(fs::exists(dir("b8/train.log")));
  // Test images of another size than the training images.
  write_png_folder(dir("png/test"), test_images);
  std::vector<std::uint8_t> big(16 * 16, 7);
  BOOST_TEST_REQUIRE(stbi_write_png(dir("png/test/class0/big.png").c_str(), 16, 16, 1, big.data(), 16) != 0);
  fs::remove(dir("png/train/class1/00100.png"));
  auto data = folder_data();
  r = train(config(data), "b9");
  test::expect_one_error(r, 1, {"big.png", "16x16"});
}

BOOST_AUTO_TEST_SUITE_END()
