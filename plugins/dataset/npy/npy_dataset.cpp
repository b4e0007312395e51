// Dataset "npy": inputs and targets from .npy files written by numpy.save,
// memory-mapped: batches are read from the page cache, never the whole array.
#include <sys/stat.h>

#include "skein/dataset.hpp"
#include "skein/kit/datasets.hpp"
#include "skein/kit/index_tensor.hpp"
#include "skein/kit/npy.hpp"
#include "skein/plugin.hpp"

namespace {

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
  explicit NpyDataset(const skein::PluginArgs& args) : opt_(args.options) {
    train_ = open("train_inputs", "train_targets");
    info_ = skein::infer_data_info(train_->inputs(), train_->targets(), opt_.get_int("classes"),
                                   opt_.get_string("train_inputs") + " and " + opt_.get_string("train_targets"));
    if (opt_.get_int("classes") < 0) opt_.fail("classes", "must be >= 0");
    test_ = open_held_out("test", "test_inputs", "test_targets");
    valid_ = open_held_out("validation", "valid_inputs", "valid_targets");
  }
  skein::DataInfo info() const override { return info_; }
  std::shared_ptr<const skein::SampleSource> train_source() override { return train_; }
  std::shared_ptr<const skein::SampleSource> test_source() override { return test_; }
  std::shared_ptr<const skein::SampleSource> valid_source() override { return valid_; }

 private:
  std::shared_ptr<NpySource> open(const char* inputs_key, const char* targets_key) const {
    const skein::MappedNpy mapped_inputs = map(inputs_key), mapped_targets = map(targets_key);
    const torch::Tensor& inputs = mapped_inputs.tensor();
    const torch::Tensor& targets = mapped_targets.tensor();
    if (inputs.dim() < 1 || targets.dim() < 1 || inputs.size(0) != targets.size(0))
      throw std::runtime_error(opt_.get_string(inputs_key) + " holds " + std::to_string(inputs.dim() ? inputs.size(0) : 0) +
                               " samples but " + opt_.get_string(targets_key) + " holds " +
                               std::to_string(targets.dim() ? targets.size(0) : 0));
    if (inputs.size(0) == 0) throw std::runtime_error(opt_.get_string(inputs_key) + ": holds no samples");
    return std::make_shared<NpySource>(mapped_inputs, mapped_targets);
  }
  // A test or validation pair of files, shaped as training samples; none when both are empty.
  std::shared_ptr<NpySource> open_held_out(const char* split, const char* inputs_key, const char* targets_key) const {
    if (opt_.get_string(inputs_key).empty() && opt_.get_string(targets_key).empty()) return nullptr;
    auto source = open(inputs_key, targets_key);
    skein::check_held_out_shape(info_, source->inputs(), opt_.get_string(inputs_key), split);
    return source;
  }
  skein::MappedNpy map(const char* key) const {
    const std::string path = opt_.get_string(key);
    struct stat st {};
    if (path.empty()) opt_.fail(key, "is empty (give both files of a split, inputs and targets, or neither)");
    if (::stat(path.c_str(), &st) != 0) opt_.fail(key, "names '" + path + "', which does not exist");
    return skein::MappedNpy(path);  // refuses a FIFO or device before opening it
  }

  skein::Options opt_;
  skein::DataInfo info_;
  std::shared_ptr<NpySource> train_, test_, valid_;
};

}  // namespace

SKEIN_PLUGIN(NpyDataset, dataset, "npy", "1.1.0",
             "Inputs and targets from .npy files (numpy.save), memory-mapped; integer targets are class ids",
             SKEIN_REQUIRED_OPTION("train_inputs", string, ".npy of training inputs [N, ...]"),
             SKEIN_REQUIRED_OPTION("train_targets", string, ".npy of training targets [N] or [N, ...]"),
             SKEIN_OPTION("test_inputs", string, "\"\"", ".npy of test inputs (empty: no test split)"),
             SKEIN_OPTION("test_targets", string, "\"\"", ".npy of test targets"),
             SKEIN_OPTION("valid_inputs", string, "\"\"",
                          ".npy of validation inputs, used instead of valid_split (empty: valid_split)"),
             SKEIN_OPTION("valid_targets", string, "\"\"", ".npy of validation targets"),
             SKEIN_OPTION("classes", integer, "0", "Number of classes of integer targets (0: largest + 1)"))
