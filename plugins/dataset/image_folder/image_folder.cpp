// Dataset "image_folder": root/<class>/<image> files (PNG, JPEG, BMP),
// decoded with stb_image when a batch is fetched, never all at once.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <mutex>

#include <boost/filesystem.hpp>

#include "image_decode.hpp"
#include "skein/dataset.hpp"
#include "skein/plugin.hpp"

namespace fs = boost::filesystem;

// Declared once: the schema and ImageFolderOptions. (The folders, root,
// test_root and valid_root, are read by key, the key naming them in errors.)
#define IMAGE_FOLDER_OPTIONS(X)                                                                         \
  X(root, string, nullptr, "Training images: one folder per class")                                     \
  X(test_root, string, "\"\"", "Test images, the same class folders (empty: none)")                     \
  X(valid_root, string, "\"\"",                                                                         \
    "Validation images, the same class folders, used instead of valid_split (empty: valid_split)")     \
  X(size, int_list, "[]", "[height, width] to resize to ([]: keep; all images alike)",                  \
    SKEIN_RANGE("[1, 8192]"))                                                                           \
  X(channels, integer, "0", "1 (gray) or 3 (RGB); 0: as the first image")                               \
  X(mean, number_list, "[]", "Subtracted after scaling to [0, 1] (one value or per channel)")           \
  X(std, number_list, "[]", "Divides after subtracting the mean", SKEIN_RANGE("(0, )"))                 \
  X(flip, boolean, "false", "Random horizontal flip of training images")                                \
  X(cache_mb, integer, "0", "Keep up to this many MiB of decoded training images in memory (0: decode every epoch)", \
    SKEIN_RANGE("[0, 16777216]"))

namespace {

SKEIN_OPTIONS_STRUCT(ImageFolderOptions, IMAGE_FOLDER_OPTIONS)
using Key = ImageFolderOptions::names;  // option names, for messages

// One image: its class and file name (the class folder's path is kept once
// per split, so that a folder of millions of images costs little memory).
struct Sample {
  std::string file;
  std::int64_t label;
};

bool is_image(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp";
}

std::vector<std::string> sorted_entries(const fs::path& dir, bool directories) {
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir), end; it != end; ++it)
    if (directories ? fs::is_directory(it->path()) : (fs::is_regular_file(it->path()) && is_image(it->path())))
      names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// How every image becomes a model input.
struct Transform {
  skein_image::Shape shape;     // channels, height, width after decoding and resizing
  std::vector<double> mean, std;  // per channel (or one value); empty: none
  bool flip = false;             // random horizontal flip of training batches
};

// Mirrors an image (height x width x channels bytes) left to right.
void flip_rows(std::uint8_t* pixel, const skein_image::Shape& s) {
  const std::int64_t c = s.channels;
  for (std::int64_t y = 0; y < s.height; ++y) {
    std::uint8_t* line = pixel + y * s.width * c;
    for (std::int64_t l = 0, r = s.width - 1; l < r; ++l, --r)
      for (std::int64_t k = 0; k < c; ++k) std::swap(line[l * c + k], line[r * c + k]);
  }
}

// Decoded images kept in memory up to a byte budget, first come first kept
// (no eviction: with shuffled epochs any fixed subset is as good as another,
// and a full cache costs nothing to maintain). Thread-safe.
class DecodedCache {
 public:
  DecodedCache(std::size_t samples, std::size_t budget_bytes) : slots_(budget_bytes ? samples : 0), left_(budget_bytes) {}
  // Copies sample i's pixels into `out` when cached.
  bool get(std::size_t i, std::uint8_t* out, std::size_t bytes) const {
    if (slots_.empty()) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    if (slots_[i].empty()) return false;
    std::memcpy(out, slots_[i].data(), bytes);
    return true;
  }
  void put(std::size_t i, const std::uint8_t* pixels, std::size_t bytes) {
    if (slots_.empty()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!slots_[i].empty() || bytes > left_) return;
    slots_[i].assign(pixels, pixels + bytes);
    left_ -= bytes;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::vector<std::uint8_t>> slots_;
  std::size_t left_;
};

class FolderSource final : public skein::SampleSource {
 public:
  FolderSource(std::vector<std::string> class_dirs, std::vector<Sample> samples, Transform t, std::size_t cache_bytes)
      : class_dirs_(std::move(class_dirs)), samples_(std::move(samples)), t_(std::move(t)),
        cache_(samples_.size(), cache_bytes) {}
  std::int64_t size() const override { return static_cast<std::int64_t>(samples_.size()); }

  skein::TensorSplit fetch(const std::vector<std::int64_t>& indices, const skein::FetchOptions& options) const override {
    const auto& s = t_.shape;
    const auto b = static_cast<std::int64_t>(indices.size());
    torch::Tensor pixels = torch::empty({b, s.height, s.width, s.channels}, torch::kUInt8);
    torch::Tensor targets = torch::empty({b}, torch::kLong);
    std::uint8_t* out = pixels.data_ptr<std::uint8_t>();
    std::int64_t* labels = targets.data_ptr<std::int64_t>();
    const std::int64_t row = s.width * s.channels, image = s.height * row;
    std::uint64_t coin = options.seed;
    for (std::int64_t i = 0; i < b; ++i) {
      const auto index = static_cast<std::size_t>(indices[static_cast<std::size_t>(i)]);
      const Sample& sample = samples_.at(index);
      std::uint8_t* pixel = out + i * image;
      if (!cache_.get(index, pixel, static_cast<std::size_t>(image))) {
        skein_image::decode_into(class_dirs_[static_cast<std::size_t>(sample.label)] + "/" + sample.file, s, pixel);
        cache_.put(index, pixel, static_cast<std::size_t>(image));
      }
      labels[i] = sample.label;
      coin = coin * 6364136223846793005ULL + 1442695040888963407ULL;  // a step of Knuth's MMIX LCG
      if (options.augment && t_.flip && (coin >> 63)) flip_rows(pixel, s);
    }
    // As the idx dataset does: scale to [0, 1], then (x - mean) / std. Into
    // NCHW strides: a [N, 1, H, W] view of NHWC pixels counts as contiguous
    // yet has channels-last strides, which send convolutions down other
    // kernels (other rounding: the same data would train to another history).
    torch::Tensor x = torch::empty({b, s.channels, s.height, s.width}, torch::kFloat32);
    x.copy_(pixels.permute({0, 3, 1, 2})).div_(255.0);
    if (t_.mean.size() == 1) {
      x.sub_(t_.mean[0]).div_(t_.std[0]);
    } else if (!t_.mean.empty()) {
      auto per_channel = [&](const std::vector<double>& v) {
        return torch::tensor(v, torch::kDouble).to(torch::kFloat32).view({1, s.channels, 1, 1});
      };
      x.sub_(per_channel(t_.mean)).div_(per_channel(t_.std));
    }
    return {x.contiguous(), targets};
  }

 private:
  std::vector<std::string> class_dirs_;  // by label
  std::vector<Sample> samples_;
  Transform t_;
  mutable DecodedCache cache_;
};

// Declares its scaling (ScaledInputs): predict and export then take decoded pixels.
class ImageFolder final : public skein::StreamingDataset, public skein::OwnValidation, public skein::ScaledInputs {
 public:
  explicit ImageFolder(const skein::PluginArgs& args) : opt_(args.options), o_(args.options) {
    const fs::path root = directory(Key::root, o_.root);
    classes_ = sorted_entries(root, true);
    if (classes_.empty()) opt_.fail(Key::root, "holds no class folders ('" + root.string() + "/<class>/<image>')");
    auto train = list(root, Key::root);
    transform_ = make_transform((root / classes_[static_cast<std::size_t>(train.front().label)] / train.front().file).string());
    info_.input_shape = {transform_.shape.channels, transform_.shape.height, transform_.shape.width};
    info_.num_classes = static_cast<std::int64_t>(classes_.size());
    train_ = std::make_shared<FolderSource>(class_dirs(root), std::move(train), transform_,
                                            static_cast<std::size_t>(o_.cache_mb) << 20);
    test_ = held_out(Key::test_root, o_.test_root);
    valid_ = held_out(Key::valid_root, o_.valid_root);
  }
  skein::DataInfo info() const override { return info_; }
  std::shared_ptr<const skein::SampleSource> train_source() override { return train_; }
  std::shared_ptr<const skein::SampleSource> test_source() override { return test_; }
  std::shared_ptr<const skein::SampleSource> valid_source() override { return valid_; }
  skein::InputScale input_scale() const override { return {255.0, transform_.mean, transform_.std}; }

 private:
  // Test or validation images in the training root's class folders (option
  // `key`, naming `path`); none when not named.
  std::shared_ptr<FolderSource> held_out(const char* key, const std::string& path) const {
    if (path.empty()) return nullptr;
    const fs::path dir = directory(key, path);
    return std::make_shared<FolderSource>(class_dirs(dir), list(dir, key), transform_, 0);
  }

  // The directory option `key` names (`path`).
  fs::path directory(const char* key, const std::string& path) const {
    if (!fs::is_directory(path)) opt_.fail(key, "names '" + path + "', which is not a directory");
    return path;
  }

  std::vector<std::string> class_dirs(const fs::path& dir) const {
    std::vector<std::string> dirs;
    for (const auto& name : classes_) dirs.push_back((dir / name).string());
    return dirs;
  }

  // Every image under dir/<class>/, class by class, files in name order.
  std::vector<Sample> list(const fs::path& dir, const char* key) const {
    std::vector<Sample> samples;
    for (const auto& name : sorted_entries(dir, true)) {
      auto it = std::find(classes_.begin(), classes_.end(), name);
      if (it == classes_.end())
        opt_.fail(key, "has a class folder '" + name + "' that the training root does not have");
      const auto label = static_cast<std::int64_t>(it - classes_.begin());
      for (auto& file : sorted_entries(dir / name, false)) samples.push_back({std::move(file), label});
    }
    if (samples.empty()) opt_.fail(key, "holds no images (.png, .jpg, .jpeg, .bmp) in its class folders");
    samples.shrink_to_fit();
    return samples;
  }

  Transform make_transform(const std::string& first_image) const {
    Transform t;
    const skein_image::Shape found = skein_image::probe(first_image);
    const auto& size = o_.size;
    if (!size.empty() && size.size() != 2) opt_.fail(Key::size, "must be [] or [height, width]");
    const auto channels = o_.channels;
    if (channels != 0 && channels != 1 && channels != 3) opt_.fail(Key::channels, "must be 0 (as the images), 1 or 3");
    t.shape.channels = channels ? channels : found.channels;
    t.shape.height = size.empty() ? found.height : size[0];
    t.shape.width = size.empty() ? found.width : size[1];
    t.shape.resize = !size.empty();
    t.mean = o_.mean;
    t.std = o_.std;
    if (t.mean.size() != t.std.size() ||
        !(t.mean.empty() || t.mean.size() == 1 || static_cast<std::int64_t>(t.mean.size()) == t.shape.channels))
      opt_.fail(Key::mean, "and '" + std::string(Key::std) + "' must both be empty, one value, or one value per channel");
    t.flip = o_.flip;
    return t;
  }

  skein::Options opt_;
  ImageFolderOptions o_;
  std::vector<std::string> classes_;
  Transform transform_;
  skein::DataInfo info_;
  std::shared_ptr<FolderSource> train_, test_, valid_;
};

}  // namespace

SKEIN_PLUGIN(ImageFolder, dataset, "image_folder", "1.1.0",
             "Images in root/<class>/ folders (PNG, JPEG, BMP), decoded batch by batch while training runs",
             SKEIN_OPTION_SPECS(IMAGE_FOLDER_OPTIONS))
