// Dataset "tensors": each split a file written by Python's
// torch.save({"inputs": x, "targets": y}, path).
#include <sys/stat.h>

#include "skein/dataset.hpp"
#include "skein/kit/datasets.hpp"
#include "skein/plugin.hpp"
#include "skein/io/torch_file.hpp"

// Declared once: the schema and TensorsOptions.
#define TENSORS_OPTIONS(X)                                                                                   \
  X(train, string, nullptr, "File of the training split")                                                    \
  X(test, string, "\"\"", "File of the test split (empty: none)")                                            \
  X(valid, string, "\"\"", "File of the validation split, used instead of valid_split (empty: valid_split)") \
  X(classes, integer, "0", "Number of classes of integer targets (0: largest + 1)", SKEIN_RANGE("[0, )"))

namespace {

SKEIN_OPTIONS_STRUCT(TensorsOptions, TENSORS_OPTIONS)

class TensorsDataset final : public skein::InMemoryDataset, public skein::OwnValidation {
 public:
  explicit TensorsDataset(const skein::PluginArgs& args) : opt_(args.options), o_(args.options) {
    using Key = TensorsOptions::names;
    train_ = load(Key::train, o_.train);
    info_ = skein::infer_data_info(train_.inputs, train_.targets, o_.classes, o_.train);
    test_ = load_held_out(Key::test, o_.test, "test");
    valid_ = load_held_out(Key::valid, o_.valid, "validation");
  }

  std::optional<skein::TensorSplit> valid() override { return valid_; }

 private:
  // A test or validation file (option `key`, naming `path`), shaped as
  // training samples; none when not named.
  std::optional<skein::TensorSplit> load_held_out(const char* key, const std::string& path, const char* name) const {
    if (path.empty()) return std::nullopt;
    skein::TensorSplit split = load(key, path);
    skein::check_held_out_shape(info_, split.inputs, path, name);
    return split;
  }

  // The file `path` that option `key` names.
  skein::TensorSplit load(const char* key, const std::string& path) const {
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
  TensorsOptions o_;
  std::optional<skein::TensorSplit> valid_;
};

}  // namespace

SKEIN_PLUGIN(TensorsDataset, dataset, "tensors", "1.1.0",
             "Tensors saved from Python: torch.save({\"inputs\": x, \"targets\": y}, path) per split",
             SKEIN_OPTION_SPECS(TENSORS_OPTIONS))
