// Dataset "tensors": each split a file written by Python's
// torch.save({"inputs": x, "targets": y}, path).
#include <sys/stat.h>

#include "skein/dataset.hpp"
#include "skein/kit/datasets.hpp"
#include "skein/plugin.hpp"
#include "skein/kit/torch_file.hpp"

namespace {

class TensorsDataset final : public skein::InMemoryDataset, public skein::OwnValidation {
 public:
  explicit TensorsDataset(const skein::PluginArgs& args) : opt_(args.options) {
    if (opt_.get_int("classes") < 0) opt_.fail("classes", "must be >= 0");
    train_ = load("train");
    info_ = skein::infer_data_info(train_.inputs, train_.targets, opt_.get_int("classes"), opt_.get_string("train"));
    test_ = load_held_out("test", "test");
    valid_ = load_held_out("valid", "validation");
  }

  std::optional<skein::TensorSplit> valid() override { return valid_; }

 private:
  // A test or validation file, shaped as training samples; none when not named.
  std::optional<skein::TensorSplit> load_held_out(const char* key, const char* name) const {
    if (opt_.get_string(key).empty()) return std::nullopt;
    skein::TensorSplit split = load(key);
    skein::check_held_out_shape(info_, split.inputs, opt_.get_string(key), name);
    return split;
  }

  skein::TensorSplit load(const char* key) const {
    const std::string path = opt_.get_string(key);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) opt_.fail(key, "names '" + path + "', which does not exist");
    const c10::IValue value = skein::read_torch_save(path);
    if (!value.isGenericDict())
      throw std::runtime_error(path + ": holds a " + value.tagKind() +
                               "; expected torch.save({\"inputs\": x, \"targets\": y})");
    const auto dict = value.toGenericDict();
    auto tensor = [&](const char* name) {
      auto it = dict.find(name);
      if (it == dict.end() || !it->value().isTensor())
        throw std::runtime_error(path + ": no tensor under \"" + name +
                                 "\"; expected torch.save({\"inputs\": x, \"targets\": y})");
      return it->value().toTensor();
    };
    skein::TensorSplit split{skein::as_model_inputs(tensor("inputs")), skein::as_loss_targets(tensor("targets"))};
    (void)skein::infer_data_info(split.inputs, split.targets, 0, path);  // checks the lengths
    if (split.size() == 0) throw std::runtime_error(path + ": holds no samples");
    return split;
  }

  skein::Options opt_;
  std::optional<skein::TensorSplit> valid_;
};

}  // namespace

SKEIN_PLUGIN(TensorsDataset, dataset, "tensors", "1.1.0",
             "Tensors saved from Python: torch.save({\"inputs\": x, \"targets\": y}, path) per split",
             SKEIN_REQUIRED_OPTION("train", string, "File of the training split"),
             SKEIN_OPTION("test", string, "\"\"", "File of the test split (empty: none)"),
             SKEIN_OPTION("valid", string, "\"\"", "File of the validation split, used instead of valid_split (empty: valid_split)"),
             SKEIN_OPTION("classes", integer, "0", "Number of classes of integer targets (0: largest + 1)"))
