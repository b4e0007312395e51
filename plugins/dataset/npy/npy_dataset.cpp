// Dataset "npy": inputs and targets from .npy files written by numpy.save,
// memory-mapped: batches are read from the page cache, never the whole array.
#include <sys/stat.h>

#include "skein/dataset.hpp"
#include "skein/kit/datasets.hpp"
#include "skein/io/index_tensor.hpp"
#include "skein/io/npy.hpp"
#include "skein/plugin.hpp"

// Declared once: the schema and NpyOptions.
#define NPY_OPTIONS(X)                                                                              \
  X(train_inputs, string, nullptr, ".npy of training inputs [N, ...]")                              \
  X(train_targets, string, nullptr, ".npy of training targets [N] or [N, ...]")                     \
  X(test_inputs, string, "\"\"", ".npy of test inputs (empty: no test split)")                      \
  X(test_targets, string, "\"\"", ".npy of test targets")                                           \
  X(valid_inputs, string, "\"\"",                                                                   \
    ".npy of validation inputs, used instead of valid_split (empty: valid_split)")                  \
  X(valid_targets, string, "\"\"", ".npy of validation targets")                                    \
  X(classes, integer, "0", "Number of classes of integer targets (0: largest + 1)", SKEIN_RANGE("[0, )"))

namespace {

SKEIN_OPTIONS_STRUCT(NpyOptions, NPY_OPTIONS)

// Rows of two mapped arrays; converted to model inputs and loss targets per batch.
class NpySource final : public skein::SampleSource {
 public:
  NpySource(skein::MappedNpy inputs, skein::MappedNpy targets)
      : inputs_(std::move(inputs)), targets_(std::move(targets)) {}
  std::int64_t size() const override { return inputs().size(0); }
  const torch::Tensor& inputs() const { return inputs_.tensor(); }
  const torch::Tensor& targets() const { return targets_.tensor(); }
  skein::TensorSplit fetch(const std::vector<std::int64_t>& indices, const skein::FetchOptions&) const override {
    // Before reading: a file truncated since is an error, not SIGBUS. After:
    // the rows copied are the data opened, not a file half rewritten.
    check();
    const torch::Tensor idx = skein::index_tensor(indices);
    skein::TensorSplit batch{inputs().index_select(0, idx), targets().index_select(0, idx)};
    check();
    return {skein::as_model_inputs(batch.inputs), skein::as_loss_targets(batch.targets)};
  }

 private:
  void check() const {
    inputs_.check();
    targets_.check();
  }

  skein::MappedNpy inputs_, targets_;
};

class NpyDataset final : public skein::StreamingDataset, public skein::OwnValidation {
 public:
  explicit NpyDataset(const skein::PluginArgs& args) : opt_(args.options), o_(args.options) {
    using Key = NpyOptions::names;
    train_ = open({Key::train_inputs, o_.train_inputs}, {Key::train_targets, o_.train_targets});
    info_ = skein::infer_data_info(train_->inputs(), train_->targets(), o_.classes,
                                   o_.train_inputs + " and " + o_.train_targets);
    test_ = open_held_out("test", {Key::test_inputs, o_.test_inputs}, {Key::test_targets, o_.test_targets});
    valid_ = open_held_out("validation", {Key::valid_inputs, o_.valid_inputs}, {Key::valid_targets, o_.valid_targets});
  }
  skein::DataInfo info() const override { return info_; }
  std::shared_ptr<const skein::SampleSource> train_source() override { return train_; }
  std::shared_ptr<const skein::SampleSource> test_source() override { return test_; }
  std::shared_ptr<const skein::SampleSource> valid_source() override { return valid_; }

 private:
  // An option naming a file: its key and its value.
  struct FileOption {
    const char* key;
    const std::string& path;
  };

  std::shared_ptr<NpySource> open(const FileOption& inputs_file, const FileOption& targets_file) const {
    const skein::MappedNpy mapped_inputs = map(inputs_file), mapped_targets = map(targets_file);
    const torch::Tensor& inputs = mapped_inputs.tensor();
    const torch::Tensor& targets = mapped_targets.tensor();
    if (inputs.dim() < 1 || targets.dim() < 1 || inputs.size(0) != targets.size(0))
      throw std::runtime_error(inputs_file.path + " holds " + std::to_string(inputs.dim() ? inputs.size(0) : 0) +
                               " samples but " + targets_file.path + " holds " +
                               std::to_string(targets.dim() ? targets.size(0) : 0));
    if (inputs.size(0) == 0) throw std::runtime_error(inputs_file.path + ": holds no samples");
    return std::make_shared<NpySource>(mapped_inputs, mapped_targets);
  }
  // A test or validation pair of files, shaped as training samples; none when both are empty.
  std::shared_ptr<NpySource> open_held_out(const char* split, const FileOption& inputs_file,
                                           const FileOption& targets_file) const {
    if (inputs_file.path.empty() && targets_file.path.empty()) return nullptr;
    auto source = open(inputs_file, targets_file);
    skein::check_held_out_shape(info_, source->inputs(), inputs_file.path, split);
    return source;
  }
  skein::MappedNpy map(const FileOption& file) const {
    const std::string& path = file.path;
    struct stat st {};
    if (path.empty()) opt_.fail(file.key, "is empty (give both files of a split, inputs and targets, or neither)");
    if (::stat(path.c_str(), &st) != 0) opt_.fail(file.key, "names '" + path + "', which does not exist");
    return skein::MappedNpy(path);  // refuses a FIFO or device before opening it
  }

  skein::Options opt_;
  NpyOptions o_;
  skein::DataInfo info_;
  std::shared_ptr<NpySource> train_, test_, valid_;
};

}  // namespace

SKEIN_PLUGIN(NpyDataset, dataset, "npy", "1.1.0",
             "Inputs and targets from .npy files (numpy.save), memory-mapped; integer targets are class ids",
             SKEIN_OPTION_SPECS(NPY_OPTIONS))
