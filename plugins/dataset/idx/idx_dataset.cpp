// Dataset "idx": images and labels in IDX files (MNIST, Fashion-MNIST, ...).
#include <boost/filesystem.hpp>
#include <torch/torch.h>

#include "idx_file.hpp"
#include "skein/dataset.hpp"
#include "skein/memory.hpp"
#include "skein/plugin.hpp"

namespace {

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
    train_ = load("train_images", "train_labels");
    const auto declared = opt_.get_int("classes");
    info_.num_classes = declared > 0 ? declared : train_.targets.max().item<std::int64_t>() + 1;
    for (std::size_t i = 1; i < static_cast<std::size_t>(train_.inputs.dim()); ++i)
      info_.input_shape.push_back(train_.inputs.size(static_cast<std::int64_t>(i)));
    if (!opt_.get_string("test_images").empty()) test_ = load("test_images", "test_labels");
  }

  static constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

 private:
  // The file named by option `key` in dir, as given or with ".gz" appended.
  std::string find(const std::string& key) const {
    const std::string name = opt_.get_string(key);
    for (const std::string& candidate : {dir_ + "/" + name, dir_ + "/" + name + ".gz"})
      if (boost::filesystem::is_regular_file(candidate)) return candidate;
    opt_.fail(key, "names '" + name + "', but neither " + dir_ + "/" + name + " nor its .gz exists");
  }

  skein::TensorSplit load(const std::string& images_key, const std::string& labels_key) {
    const std::string images_path = find(images_key), labels_path = find(labels_key);
    skein_idx::IdxArray images = skein_idx::read_idx(images_path, skein::physical_memory_bytes());
    skein_idx::IdxArray labels = skein_idx::read_idx(labels_path, skein::physical_memory_bytes());
    if (images.dims.size() < 2)
      throw std::runtime_error(images_path + ": expected images with at least 2 dimensions");
    if (labels.dims.size() != 1)
      throw std::runtime_error(labels_path + ": expected a 1-d label file");
    if (images.dims[0] != labels.dims[0])
      throw std::runtime_error("count mismatch: " + images_path + " holds " +
                               std::to_string(images.dims[0]) + " images but " + labels_path +
                               " holds " + std::to_string(labels.dims[0]) + " labels");
    if (images.dims[0] == 0) throw std::runtime_error(images_path + ": holds no images");
    std::int64_t n = images.dims[0];
    if (limit_ > 0) n = std::min(n, limit_);
    // Images become float [N, 1, H, W] (a channel axis for 2-d images).
    std::vector<std::int64_t> shape = images.dims;
    if (shape.size() == 3) shape.insert(shape.begin() + 1, 1);
    shape[0] = n;
    const auto per_sample = static_cast<std::int64_t>(images.data.size()) / images.dims[0];
    skein::TensorSplit s;
    s.inputs = torch::from_blob(images.data.data(), {n * per_sample}, torch::kUInt8)
                   .to(torch::kFloat32)
                   .div_(255.0)
                   .sub_(opt_.get_number("mean"))
                   .div_(std_)
                   .reshape(shape);
    s.targets = torch::from_blob(labels.data.data(), {n}, torch::kUInt8).to(torch::kLong);
    return s;
  }

  skein::Options opt_;
  std::string dir_;
  double std_ = 1;
  std::int64_t limit_ = 0;
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
