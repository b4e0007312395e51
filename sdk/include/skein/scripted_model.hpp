#pragma once
// A model defined in Python: a module saved by torch.jit.script(m).save(path).
#include <string>

#include <torch/csrc/jit/api/module.h>

#include "skein/export.hpp"
#include "skein/model.hpp"

namespace skein {

// Trains every parameter of a TorchScript module. Its parameters and buffers
// are registered, as the very same tensors, under the module's own names
// (e.g. net.0.weight), so the optimizer, parallel wrappers, checkpoints and
// state dicts see them as those of any other model. Callbacks reach the
// scripted module, its attributes and methods, through
// ctx.model<skein::ScriptedModel>().script().
class SKEIN_EXPORT ScriptedModel : public Model {
 public:
  // Throws ConfigError naming `owner` and the file: a missing file, a file
  // that is not a TorchScript module, a forward that does not take one tensor
  // and return one tensor.
  ScriptedModel(const std::string& path, const std::string& owner);
  ~ScriptedModel() override;
  torch::Tensor forward(const torch::Tensor& inputs) override;
  void train(bool on = true) override;

  torch::jit::Module& script() { return script_; }
  const std::string& path() const { return path_; }

 private:
  torch::jit::Module script_;
  std::string path_;
  std::string owner_;
};

}  // namespace skein
