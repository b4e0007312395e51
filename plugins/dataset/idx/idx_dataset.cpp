// Dataset "idx": images and labels in IDX files (MNIST, Fashion-MNIST, ...).
#include <algorithm>
#include <array>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include <boost/filesystem.hpp>
#include <torch/torch.h>

#include "idx_file.hpp"
#include "skein/dataset.hpp"
#include "skein/memory.hpp"
#include "skein/plugin.hpp"

namespace {

// Pixels as the model sees them: table[p] for pixel value p.
using PixelTable = std::array<float, 256>;

// The images of one IDX file as float tensor [N, (1,) H, W, ...] of
// table[pixel], N limited to `limit` (0: all). The calling thread decompresses
// (read_idx_into) while a second thread converts what is already there, a few
// small buffers at a time: the two overlap, and the bytes are never held in
// one copy of the whole file.
class PixelSink final : public skein_idx::IdxSink {
 public:
  PixelSink(const PixelTable& table, std::int64_t limit) : table_(table), limit_(limit) {}
  ~PixelSink() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      abandon_ = true;
    }
    changed_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  void start(const std::vector<std::int64_t>& dims) override {
    dims_ = dims;
    // Other files are refused by the caller, after reading the labels (as ever).
    // (With no images, the product of the other dims was never checked for overflow.)
    if (dims.size() >= 2 && dims[0] > 0) {
      std::int64_t n = dims[0], per_sample = 1;
      for (std::size_t i = 1; i < dims.size(); ++i) per_sample *= dims[i];
      if (limit_ > 0) n = std::min(n, limit_);
      std::vector<std::int64_t> shape = dims;  // a channel axis for 2-d images
      if (shape.size() == 3) shape.insert(shape.begin() + 1, 1);
      shape[0] = n;
      images_ = torch::empty(shape, torch::kFloat32);
      wanted_ = static_cast<std::uint64_t>(n * per_sample);
    }
    for (std::size_t i = 0; i < buffers_.size(); ++i) free_.push_back(i);
    worker_ = std::thread([this] { convert(); });
  }

  std::pair<std::uint8_t*, std::size_t> buffer() override {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !free_.empty(); });
    writing_ = free_.front();
    free_.pop_front();
    return {buffers_[writing_].data(), kChunk};
  }

  void filled(std::size_t size) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_.emplace_back(writing_, size);
    }
    changed_.notify_all();
  }

  // After read_idx_into returned: waits for the last bytes to be converted.
  void finish() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    changed_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  const std::vector<std::int64_t>& dims() const { return dims_; }
  const torch::Tensor& images() const { return images_; }

 private:
  static constexpr std::size_t kChunk = 256 * 1024;

  void convert() {
    float* out = wanted_ > 0 ? images_.data_ptr<float>() : nullptr;
    std::uint64_t at = 0;  // bytes of the data converted (or skipped) so far
    for (;;) {
      std::pair<std::size_t, std::size_t> piece;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return abandon_ || done_ || !ready_.empty(); });
        if (abandon_ || ready_.empty()) return;
        piece = ready_.front();
        ready_.pop_front();
      }
      const std::uint8_t* in = buffers_[piece.first].data();
      const std::uint64_t end = std::min<std::uint64_t>(at + piece.second, wanted_);
      for (std::uint64_t i = at; i < end; ++i) out[i] = table_[in[i - at]];
      at += piece.second;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        free_.push_back(piece.first);
      }
      changed_.notify_all();
    }
  }

  const PixelTable& table_;
  const std::int64_t limit_;
  std::vector<std::int64_t> dims_;
  torch::Tensor images_;
  std::uint64_t wanted_ = 0;  // bytes of the data that become pixels (the first `limit` images)
  std::array<std::vector<std::uint8_t>, 4> buffers_{std::vector<std::uint8_t>(kChunk), std::vector<std::uint8_t>(kChunk),
                                                    std::vector<std::uint8_t>(kChunk), std::vector<std::uint8_t>(kChunk)};
  std::size_t writing_ = 0;                                // the buffer read_idx_into fills
  std::deque<std::size_t> free_;                           // buffers to fill
  std::deque<std::pair<std::size_t, std::size_t>> ready_;  // filled buffers and their sizes, in order
  bool done_ = false, abandon_ = false;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::thread worker_;
};

class IdxDataset final : public skein::InMemoryDataset {
 public:
  explicit IdxDataset(const skein::PluginArgs& args) : opt_(args.options) {
    dir_ = opt_.get_string("dir");
    if (!boost::filesystem::is_directory(dir_))
      opt_.fail("dir", "names '" + dir_ + "', which is not a directory" +
                           (dir_ == kFashionMnistDir
                                ? " (install the Debian package dataset-fashion-mnist)"
                                : ""));
    std_ = opt_.get_number("std");
    if (!(std_ > 0)) opt_.fail("std", "must be positive");
    limit_ = opt_.get_int("limit");
    if (limit_ < 0) opt_.fail("limit", "must be >= 0 (0: all samples)");
    // The same operations as on a tensor of all pixels, so the same floats.
    const torch::Tensor table = torch::arange(256, torch::kUInt8)
                                    .to(torch::kFloat32)
                                    .div_(255.0)
                                    .sub_(opt_.get_number("mean"))
                                    .div_(std_);
    std::copy_n(table.data_ptr<float>(), 256, pixels_.begin());
    // The test split loads on a thread of its own meanwhile. Its errors count
    // only once the training split loaded (the future's destructor waits).
    std::future<skein::TensorSplit> test;
    if (!opt_.get_string("test_images").empty())
      test = std::async(std::launch::async, [this] { return load("test_images", "test_labels"); });
    train_ = load("train_images", "train_labels");
    const auto declared = opt_.get_int("classes");
    info_.num_classes = declared > 0 ? declared : train_.targets.max().item<std::int64_t>() + 1;
    for (std::size_t i = 1; i < static_cast<std::size_t>(train_.inputs.dim()); ++i)
      info_.input_shape.push_back(train_.inputs.size(static_cast<std::int64_t>(i)));
    if (test.valid()) test_ = test.get();
  }

  static constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

 private:
  // The file named by option `key` in dir, as given or with ".gz" appended.
  // load() and find() run on two threads at once (const: they only read).
  std::string find(const std::string& key) const {
    const std::string name = opt_.get_string(key);
    for (const std::string& candidate : {dir_ + "/" + name, dir_ + "/" + name + ".gz"})
      if (boost::filesystem::is_regular_file(candidate)) return candidate;
    opt_.fail(key, "names '" + name + "', but neither " + dir_ + "/" + name + " nor its .gz exists");
  }

  skein::TensorSplit load(const std::string& images_key, const std::string& labels_key) const {
    const std::string images_path = find(images_key), labels_path = find(labels_key);
    PixelSink images(pixels_, limit_);
    skein_idx::read_idx_into(images_path, skein::physical_memory_bytes(), images);
    images.finish();
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
    std::int64_t n = dims[0];
    if (limit_ > 0) n = std::min(n, limit_);
    skein::TensorSplit s;
    s.inputs = images.images();  // float [N, 1, H, W] (a channel axis for 2-d images), normalized
    s.targets = torch::from_blob(labels.data.data(), {n}, torch::kUInt8).to(torch::kLong);
    return s;
  }

  skein::Options opt_;
  std::string dir_;
  double std_ = 1;
  std::int64_t limit_ = 0;
  PixelTable pixels_{};
};

}  // namespace

// Mean and std defaults: Fashion-MNIST's training pixels scaled to [0, 1].
SKEIN_PLUGIN(IdxDataset, dataset, "idx", "1.0.0",
             "Images and labels from IDX files, plain or .gz (default: Fashion-MNIST)",
             SKEIN_OPTION("dir", string, "\"/usr/share/datasets/fashion-mnist\"",
                          "Directory holding the four files"),
             SKEIN_OPTION("train_images", string, "\"train-images-idx3-ubyte\"",
                          "Training images file (a .gz beside it is found too)"),
             SKEIN_OPTION("train_labels", string, "\"train-labels-idx1-ubyte\"",
                          "Training labels file"),
             SKEIN_OPTION("test_images", string, "\"t10k-images-idx3-ubyte\"",
                          "Test images file (empty: no test split)"),
             SKEIN_OPTION("test_labels", string, "\"t10k-labels-idx1-ubyte\"", "Test labels file"),
             SKEIN_OPTION("mean", number, "0.2860", "Subtracted after scaling pixels to [0, 1]"),
             SKEIN_OPTION("std", number, "0.3530", "Divides after subtracting the mean"),
             SKEIN_OPTION("classes", integer, "0", "Number of classes (0: largest label + 1)"),
             SKEIN_OPTION("limit", integer, "0", "Use only the first N samples of each split (0: all)"))
