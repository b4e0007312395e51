#define BOOST_TEST_MODULE idx
#include <boost/test/unit_test.hpp>

#include <fstream>

#include "idx_test_files.hpp"
#include "skein/dataset.hpp"
#include "skein/errors.hpp"
#include "skein/io/input_file.hpp"
#include "skein/testing.hpp"

namespace {

using idx_test::write_idx;
using idx_test::write_tiny_mnist;

using skein::testing::contains;
std::string read_text(const std::string& path) { return skein::read_whole_file(path).value(); }
void write_text(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  BOOST_REQUIRE(out.flush());
}

struct Fixture {
  std::shared_ptr<skein::Dataset> open(nlohmann::json options) {
    return harness.create<skein::Dataset>("idx", std::move(options));
  }
  // The error text of opening the dataset, or "".
  std::string error(nlohmann::json options) {
    return skein::testing::message_of([&] { open(std::move(options)); });
  }

  skein::testing::Harness harness;
  skein::testing::TempDir tmp;
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(idx, Fixture)

BOOST_AUTO_TEST_CASE(reads_gzipped_and_plain_files) {
  for (bool gzip : {true, false}) {
    skein::testing::TempDir dir;
    write_tiny_mnist(dir.str(), 30, 20, gzip);
    auto data = open({{"dir", dir.str()}});
    auto info = data->info();
    BOOST_TEST(info.num_classes == 10);
    BOOST_TEST(info.input_shape == std::vector<std::int64_t>({1, 28, 28}));
    auto train = data->train();
    BOOST_TEST(train.size() == 30);
    BOOST_TEST(train.inputs.sizes() == torch::IntArrayRef({30, 1, 28, 28}));
    BOOST_TEST(train.targets[13].item<std::int64_t>() == 3);
    // Pixel 255 maps to (1 - mean) / std, pixel 0 to -mean / std.
    BOOST_TEST(train.inputs.max().item<double>() == (1 - 0.2860) / 0.3530, boost::test_tools::tolerance(1e-5));
    BOOST_TEST(train.inputs.min().item<double>() == -0.2860 / 0.3530, boost::test_tools::tolerance(1e-5));
    auto test = data->test();
    BOOST_REQUIRE(test.has_value());
    BOOST_TEST(test->size() == 20);
  }
}

// What export and predict apply to raw pixels (skein::ScaledInputs): the options' mean and std.
BOOST_AUTO_TEST_CASE(declares_how_it_scales_pixels) {
  write_tiny_mnist(tmp.str(), 10, 0, false);
  auto data = open({{"dir", tmp.str()}, {"test_images", ""}, {"mean", 0.5}, {"std", 0.25}});
  const auto* scaled = dynamic_cast<const skein::ScaledInputs*>(data.get());
  BOOST_TEST_REQUIRE(scaled);
  const skein::InputScale scale = scaled->input_scale();
  BOOST_TEST(scale.divide_by == 255.0);
  BOOST_TEST(scale.mean == std::vector<double>({0.5}));
  BOOST_TEST(scale.std == std::vector<double>({0.25}));
  // Pixel 255 (the bar) and 0, as the declaration computes them.
  const auto inputs = data->train().inputs;
  BOOST_TEST(inputs.max().item<double>() == (255.0 / scale.divide_by - 0.5) / 0.25, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(inputs.min().item<double>() == (0.0 - 0.5) / 0.25, boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(limit_and_no_test_split) {
  write_tiny_mnist(tmp.str(), 30, 20, true);
  auto data = open({{"dir", tmp.str()}, {"limit", 12}, {"test_images", ""}});
  BOOST_TEST(data->train().size() == 12);
  BOOST_TEST(!data->test().has_value());
}

BOOST_AUTO_TEST_CASE(missing_directory_and_files_name_the_option) {
  auto err = error({{"dir", tmp.str("nope")}});
  BOOST_TEST(contains(err, "option 'dir'"), err);
  BOOST_TEST(contains(err, "nope"), err);
  err = error({{"dir", tmp.str()}});
  BOOST_TEST(contains(err, "option 'train_images'"), err);
}

BOOST_AUTO_TEST_CASE(bad_magic_is_reported_with_the_file) {
  write_tiny_mnist(tmp.str(), 10, 10, false);
  write_text(tmp.str("train-images-idx3-ubyte"), "PK\x03\x04 definitely not idx");
  auto err = error({{"dir", tmp.str()}});
  BOOST_TEST(contains(err, "train-images-idx3-ubyte: bad magic"), err);
}

BOOST_AUTO_TEST_CASE(truncated_body_is_reported) {
  write_tiny_mnist(tmp.str(), 10, 10, false);
  std::string full = read_text(tmp.str("train-images-idx3-ubyte"));
  write_text(tmp.str("train-images-idx3-ubyte"), full.substr(0, full.size() - 100));
  auto err = error({{"dir", tmp.str()}});
  BOOST_TEST(contains(err, "truncated"), err);
  BOOST_TEST(contains(err, "7840 bytes"), err);
}

BOOST_AUTO_TEST_CASE(truncated_gzip_is_reported) {
  write_tiny_mnist(tmp.str(), 50, 10, true);
  std::string full = read_text(tmp.str("train-images-idx3-ubyte.gz"));
  write_text(tmp.str("train-images-idx3-ubyte.gz"), full.substr(0, full.size() / 2));
  auto err = error({{"dir", tmp.str()}});
  BOOST_TEST(contains(err, "train-images-idx3-ubyte.gz"), err);
}

// The plugin keeps the file's bytes and normalizes each fetched batch with a
// table: the same floats as the tensor formula on all pixels, for the whole
// split, a limit that ends inside the data, and a batch of scattered rows.
BOOST_AUTO_TEST_CASE(pixels_match_the_tensor_formula) {
  const std::uint32_t n = 3000;  // 2.35 MB of pixels
  std::vector<std::uint8_t> images(std::size_t{n} * 784), labels(n);
  for (std::size_t i = 0; i < images.size(); ++i) images[i] = static_cast<std::uint8_t>((i * 7919) % 251 + i / 100003);
  for (std::uint32_t i = 0; i < n; ++i) labels[i] = static_cast<std::uint8_t>(i % 10);
  for (bool gzip : {true, false}) {
    skein::testing::TempDir dir;
    const std::string ext = gzip ? ".gz" : "";
    write_idx(dir.str("train-images-idx3-ubyte" + ext), {n, 28, 28}, images, gzip);
    write_idx(dir.str("train-labels-idx1-ubyte" + ext), {n}, labels, gzip);
    for (std::int64_t limit : {0, 1001}) {
      auto data = open({{"dir", dir.str()}, {"test_images", ""}, {"limit", limit}, {"mean", 0.25}, {"std", 0.3}});
      const std::int64_t m = limit > 0 ? limit : n;
      const auto expected = torch::from_blob(images.data(), {m, 1, 28, 28}, torch::kUInt8)
                                .to(torch::kFloat32)
                                .div_(255.0)
                                .sub_(0.25)
                                .div_(0.3);
      const auto train = data->train();
      BOOST_TEST(train.inputs.sizes() == expected.sizes());
      BOOST_TEST(torch::equal(train.inputs, expected), "gzip " << gzip << ", limit " << limit);
      BOOST_TEST(train.targets[m - 1].item<std::int64_t>() == (m - 1) % 10);
      // Batch by batch, as the trainer reads it, with every target in memory.
      auto source = std::dynamic_pointer_cast<skein::StreamingDataset>(data)->train_source();
      BOOST_TEST(source->targets_in_memory().size(0) == m);
      const std::vector<std::int64_t> rows{m - 1, 0, 517, 3, 517};
      const auto batch = source->fetch(rows, skein::FetchOptions{});
      const auto index = torch::tensor(rows, torch::kLong);
      BOOST_TEST(torch::equal(batch.inputs, expected.index_select(0, index)));
      BOOST_TEST(torch::equal(batch.targets, train.targets.index_select(0, index)));
    }
    // Cut inside the data: the error names the file (the converting thread stops).
    const std::string path = dir.str("train-images-idx3-ubyte" + ext);
    const std::string full = read_text(path);
    write_text(path, full.substr(0, full.size() * 2 / 3));
    const auto err = error({{"dir", dir.str()}, {"test_images", ""}});
    BOOST_TEST(contains(err, path), err);
  }
}

BOOST_AUTO_TEST_CASE(count_mismatch_names_both_files) {
  write_tiny_mnist(tmp.str(), 10, 10, true);
  write_idx(tmp.str("train-labels-idx1-ubyte.gz"), {9}, std::vector<std::uint8_t>(9, 1), true);
  auto err = error({{"dir", tmp.str()}});
  BOOST_TEST(contains(err, "count mismatch"), err);
  BOOST_TEST(contains(err, "10 images but"), err);
  BOOST_TEST(contains(err, "9 labels"), err);
}

BOOST_AUTO_TEST_CASE(idx_dimensions_whose_product_overflows_are_refused) {
  // 65536^4 = 2^64: unchecked, the product wrapped to 0 and this header-only
  // file was accepted.
  write_tiny_mnist(tmp.str(), 10, 10, false);
  write_idx(tmp.str("train-images-idx3-ubyte"), {65536, 65536, 65536, 65536}, {}, false);
  auto err = error({{"dir", tmp.str()}});
  BOOST_TEST(contains(err, "train-images-idx3-ubyte: IDX dimensions too large"), err);
}

BOOST_AUTO_TEST_CASE(an_idx_file_of_no_images_is_an_error_not_a_division_by_zero) {
  write_tiny_mnist(tmp.str(), 10, 10, false);
  write_idx(tmp.str("train-images-idx3-ubyte"), {0, 28, 28}, {}, false);
  write_idx(tmp.str("train-labels-idx1-ubyte"), {0}, {}, false);
  auto err = error({{"dir", tmp.str()}});
  BOOST_TEST(contains(err, "train-images-idx3-ubyte: holds no images"), err);
}

BOOST_AUTO_TEST_SUITE_END()
