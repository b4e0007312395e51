#define BOOST_TEST_MODULE dataset_image_folder
#include <boost/test/unit_test.hpp>

#include <boost/filesystem.hpp>
#include <stb/stb_image_write.h>

#include "skein/dataset.hpp"
#include "skein/testing.hpp"

namespace {

// root/<class>/<i>.png: `per_class` gray 4x4 images of each class, class c's pixels all 40 * c.
std::string image_folder(const skein::testing::Harness& harness, const std::string& root,
                         const std::vector<std::string>& classes, int per_class) {
  for (std::size_t c = 0; c < classes.size(); ++c) {
    const auto dir = harness.run_dir() + "/" + root + "/" + classes[c];
    boost::filesystem::create_directories(dir);
    const std::vector<unsigned char> pixels(16, static_cast<unsigned char>(40 * c));
    for (int i = 0; i < per_class; ++i)
      BOOST_REQUIRE(stbi_write_png((dir + "/" + std::to_string(i) + ".png").c_str(), 4, 4, 1, pixels.data(), 4));
  }
  return harness.run_dir() + "/" + root;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(dataset_image_folder, skein::testing::CallbackFixture)

BOOST_AUTO_TEST_CASE(one_class_a_folder_labelled_in_name_order) {
  const auto root = image_folder(harness, "train", {"cat", "dog"}, 3);
  auto data = harness.create<skein::Dataset>("image_folder", {{"root", root}});
  const auto info = data->info();
  BOOST_TEST(info.input_shape == (std::vector<std::int64_t>{1, 4, 4}));
  BOOST_TEST(info.num_classes == 2);
  auto* streaming = dynamic_cast<skein::StreamingDataset*>(data.get());
  BOOST_TEST_REQUIRE(streaming);
  const auto source = streaming->train_source();
  BOOST_TEST(source->size() == 6);
  const auto all = source->fetch({0, 1, 2, 3, 4, 5}, skein::FetchOptions{});
  for (std::int64_t i = 0; i < 6; ++i) {  // a dog's pixels are brighter than a cat's
    const bool dog = all.targets[i].item<std::int64_t>() == 1;
    BOOST_TEST((all.inputs[i].mean().item<double>() > 0.1) == dog);
  }
}

// What export and predict apply to decoded pixels (skein::ScaledInputs):
// / 255, then the options' mean and std per channel, as fetched batches are.
BOOST_AUTO_TEST_CASE(declares_how_it_scales_pixels) {
  const auto root = image_folder(harness, "train", {"cat", "dog"}, 1);
  auto data = harness.create<skein::Dataset>(
      "image_folder", {{"root", root}, {"channels", 3}, {"mean", {0.1, 0.2, 0.3}}, {"std", {0.5, 0.5, 0.25}}});
  const auto* scaled = dynamic_cast<const skein::ScaledInputs*>(data.get());
  BOOST_TEST_REQUIRE(scaled);
  const skein::InputScale scale = scaled->input_scale();
  BOOST_TEST(scale.divide_by == 255.0);
  BOOST_TEST(scale.mean == (std::vector<double>{0.1, 0.2, 0.3}));
  BOOST_TEST(scale.std == (std::vector<double>{0.5, 0.5, 0.25}));
  const auto dog = dynamic_cast<skein::StreamingDataset&>(*data).train_source()->fetch({1}, skein::FetchOptions{});
  for (int c = 0; c < 3; ++c)  // the dog's pixels are all 40
    BOOST_TEST(dog.inputs[0][c][0][0].item<double>() == (40 / scale.divide_by - scale.mean[c]) / scale.std[c],
               boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_SUITE_END()
