// Dataset "idx": images and labels in IDX files (MNIST, Fashion-MNIST, ...).
// The images stay in memory as the file's bytes (a quarter of their size as
// floats, and no pass over all of them before the first batch); each batch is
// turned into normalized floats when it is fetched.
#include <algorithm>
#include <array>
#include <future>

#include <boost/filesystem.hpp>
#include <torch/types.h>

#include "idx_file.hpp"
#include "skein/dataset.hpp"
#include "skein/io/index_tensor.hpp"
#include "skein/io/memory.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and IdxOptions. Mean and std defaults:
// Fashion-MNIST's training pixels scaled to [0, 1].
#define IDX_OPTIONS(X)                                                          \
  X(dir, string, "\"/usr/share/datasets/fashion-mnist\"",                       \
    "Directory holding the four files")                                         \
  X(train_images, string, "\"train-images-idx3-ubyte\"",                        \
    "Training images file (a .gz beside it is found too)")                      \
  X(train_labels, string, "\"train-labels-idx1-ubyte\"",                        \
    "Training labels file")                                                     \
  X(test_images, string, "\"t10k-images-idx3-ubyte\"",                          \
    "Test images file (empty: no test split)")                                  \
  X(test_labels, string, "\"t10k-labels-idx1-ubyte\"", "Test labels file")      \
  X(mean, number, "0.2860", "Subtracted after scaling pixels to [0, 1]")        \
  X(std, number, "0.3530", "Divides after subtracting the mean", SKEIN_RANGE("(0, )")) \
  X(classes, integer, "0", "Number of classes (0: largest label + 1)")          \
  X(limit, integer, "0", "Use only the first N samples of each split (0: all)", \
    SKEIN_RANGE("[0, )"))

namespace {

SKEIN_OPTIONS_STRUCT(IdxOptions, IDX_OPTIONS)
using Key = IdxOptions::names;  // option names, for messages

// Pixels as the model sees them: table[p] for pixel value p.
using PixelTable = std::array<float, 256>;

// Receives the data of an images file straight into a uint8 tensor
// [N, (1,) H, W, ...], N limited to `limit` (0: all); the bytes of later
// images go to a scratch buffer (read_idx_into still checks the whole file).
class ImageSink final : public skein_idx::IdxSink {
 public:
  explicit ImageSink(std::int64_t limit) : limit_(limit) {}

  void start(const std::vector<std::int64_t>& dims) override {
    dims_ = dims;
    // Other files are refused by the caller, after reading the labels (as ever).
    if (dims.size() < 2 || dims[0] == 0) return;
    std::int64_t n = dims[0], per_sample = 1;  // no overflow: read_idx_into checked the product
    for (std::size_t i = 1; i < dims.size(); ++i) per_sample *= dims[i];
    if (limit_ > 0) n = std::min(n, limit_);
    std::vector<std::int64_t> shape = dims;  // a channel axis for 2-d images
    if (shape.size() == 3) shape.insert(shape.begin() + 1, 1);
    shape[0] = n;
    images_ = torch::empty(shape, torch::kUInt8);
    wanted_ = static_cast<std::size_t>(n * per_sample);
  }

  std::pair<std::uint8_t*, std::size_t> buffer() override {
    in_images_ = filled_ < wanted_;
    if (in_images_) return {images_.data_ptr<std::uint8_t>() + filled_, wanted_ - filled_};
    scratch_.resize(256 * 1024);
    return {scratch_.data(), scratch_.size()};
  }

  void filled(std::size_t size) override {
    if (in_images_) filled_ += size;
  }

  const std::vector<std::int64_t>& dims() const { return dims_; }
  const torch::Tensor& images() const { return images_; }

 private:
  const std::int64_t limit_;
  std::vector<std::int64_t> dims_;
  torch::Tensor images_;
  std::size_t wanted_ = 0, filled_ = 0;  // bytes of images_, and those received
  bool in_images_ = false;               // the last buffer() was images_
  std::vector<std::uint8_t> scratch_;
};

// One split: pixels as bytes [N, ...], labels int64 [N]. A fetched batch is
// table[pixel] for every pixel: the floats of the same tensor operations
// (to float, / 255, - mean, / std) on all pixels at once.
class IdxSource final : public skein::SampleSource {
 public:
  IdxSource(torch::Tensor images, torch::Tensor labels, const PixelTable& table)
      : images_(std::move(images)), labels_(std::move(labels)), table_(table) {}
  std::int64_t size() const override { return labels_.size(0); }
  const torch::Tensor& images() const { return images_; }

  skein::TensorSplit fetch(const std::vector<std::int64_t>& indices, const skein::FetchOptions&) const override {
    std::vector<std::int64_t> shape = images_.sizes().vec();
    shape[0] = static_cast<std::int64_t>(indices.size());
    torch::Tensor inputs = torch::empty(shape, torch::kFloat32);
    const std::int64_t per_sample = images_.numel() / images_.size(0);
    const std::uint8_t* pixels = images_.data_ptr<std::uint8_t>();
    float* out = inputs.data_ptr<float>();
    for (const std::int64_t index : indices) {
      const std::uint8_t* row = pixels + index * per_sample;
      for (std::int64_t j = 0; j < per_sample; ++j) *out++ = table_[row[j]];
    }
    return {inputs, labels_.index_select(0, skein::index_tensor(indices))};
  }
  torch::Tensor targets_in_memory() const override { return labels_; }

 private:
  torch::Tensor images_, labels_;
  PixelTable table_;
};

// Declares its scaling (ScaledInputs): predict and export then take raw pixels.
class IdxDataset final : public skein::StreamingDataset, public skein::ScaledInputs {
 public:
  explicit IdxDataset(const skein::PluginArgs& args) : opt_(args.options), o_(args.options) {
    dir_ = o_.dir;
    if (!boost::filesystem::is_directory(dir_))
      opt_.fail(Key::dir, "names '" + dir_ + "', which is not a directory" +
                           (dir_ == kFashionMnistDir
                                ? " (install the Debian package dataset-fashion-mnist)"
                                : ""));
    std_ = o_.std;
    limit_ = o_.limit;
    // The same operations as on a tensor of all pixels, so the same floats.
    const torch::Tensor table = torch::arange(256, torch::kUInt8)
                                    .to(torch::kFloat32)
                                    .div_(255.0)
                                    .sub_(o_.mean)
                                    .div_(std_);
    std::copy_n(table.data_ptr<float>(), 256, pixels_.begin());
    // The test split loads on a thread of its own meanwhile. Its errors count
    // only once the training split loaded (the future's destructor waits).
    std::future<std::shared_ptr<IdxSource>> test;
    if (!o_.test_images.empty())
      test = std::async(std::launch::async,
                        [this] { return load(Key::test_images, o_.test_images, Key::test_labels, o_.test_labels); });
    train_ = load(Key::train_images, o_.train_images, Key::train_labels, o_.train_labels);
    const auto declared = o_.classes;
    info_.num_classes = declared > 0 ? declared : train_->targets_in_memory().max().item<std::int64_t>() + 1;
    for (std::int64_t i = 1; i < train_->images().dim(); ++i) info_.input_shape.push_back(train_->images().size(i));
    if (test.valid()) test_ = test.get();
  }

  skein::DataInfo info() const override { return info_; }
  std::shared_ptr<const skein::SampleSource> train_source() override { return train_; }
  std::shared_ptr<const skein::SampleSource> test_source() override { return test_; }
  skein::InputScale input_scale() const override { return {255.0, {o_.mean}, {std_}}; }

  static constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

 private:
  // The file `name` (the value of option `key`) in dir, as given or with ".gz"
  // appended. load() and find() run on two threads at once (const: they only read).
  std::string find(const std::string& key, const std::string& name) const {
    for (const std::string& candidate : {dir_ + "/" + name, dir_ + "/" + name + ".gz"})
      if (boost::filesystem::is_regular_file(candidate)) return candidate;
    opt_.fail(key, "names '" + name + "', but neither " + dir_ + "/" + name + " nor its .gz exists");
  }

  std::shared_ptr<IdxSource> load(const std::string& images_key, const std::string& images_name,
                                  const std::string& labels_key, const std::string& labels_name) const {
    const std::string images_path = find(images_key, images_name), labels_path = find(labels_key, labels_name);
    ImageSink images(limit_);
    skein_idx::read_idx_into(images_path, skein::physical_memory_bytes(), images);
    skein_idx::IdxArray labels = skein_idx::read_idx(labels_path, skein::physical_memory_bytes());
    const std::vector<std::int64_t>& dims = images.dims();
    if (dims.size() < 2)
      throw std::runtime_error(images_path + ": expected images with at least 2 dimensions");
    if (labels.dims.size() != 1)
      throw std::runtime_error(labels_path + ": expected a 1-d label file");
    if (dims[0] != labels.dims[0])
      throw std::runtime_error("count mismatch: " + images_path + " holds " + std::to_string(dims[0]) +
                               " images but " + labels_path + " holds " + std::to_string(labels.dims[0]) +
                               " labels");
    if (dims[0] == 0) throw std::runtime_error(images_path + ": holds no images");
    const std::int64_t n = images.images().size(0);
    torch::Tensor targets = torch::from_blob(labels.data.data(), {n}, torch::kUInt8).to(torch::kLong);
    return std::make_shared<IdxSource>(images.images(), std::move(targets), pixels_);
  }

  skein::Options opt_;
  IdxOptions o_;
  std::string dir_;
  double std_ = 1;
  std::int64_t limit_ = 0;
  PixelTable pixels_{};
  skein::DataInfo info_;
  std::shared_ptr<IdxSource> train_, test_;
};

}  // namespace

SKEIN_PLUGIN(IdxDataset, dataset, "idx", "1.1.0",
             "Images and labels from IDX files, plain or .gz (default: Fashion-MNIST)",
             SKEIN_OPTION_SPECS(IDX_OPTIONS))
