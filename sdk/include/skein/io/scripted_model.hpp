#pragma once
// A model defined in Python: a module saved by torch.jit.script(m).save(path).
#include <string>

#include <torch/csrc/jit/api/module.h>

#include "skein/detail/export.hpp"
#include "skein/model.hpp"

namespace skein {

// Trains every parameter of a TorchScript module. Its parameters and buffers
// are registered, as the very same tensors, under the module's own names
// (e.g. net.0.weight), so the optimizer, parallel wrappers, checkpoints and
// state dicts see them as those of any other model. Callbacks reach the
// scripted module, its attributes and methods, through
// ctx.model<skein::ScriptedModel>().script().
// SKEIN_ALLOW_SCRIPT_FILE_OPS=1 (set by --allow-script-file-ops): TorchScript
// code may call operators that reach files or processes.
SKEIN_EXPORT bool script_file_ops_allowed();

// Loads the TorchScript module in `path` with the checks below (file,
// format, operators that reach files or processes), and checks that its
// forward takes `tensor_args` tensors (1: x; 2: outputs, targets) and returns
// one. `sha256`, when given, receives the SHA-256 (hex) of the bytes loaded.
SKEIN_EXPORT torch::jit::Module load_script_module(const std::string& path, const std::string& owner,
                                                   int tensor_args, std::string* sha256 = nullptr);

class SKEIN_EXPORT ScriptedModel : public Model {
 public:
  // Throws ConfigError naming `owner` and the file: a missing file, a file
  // that is not a TorchScript module, a forward that does not take one tensor
  // and return one tensor, code that calls operators reaching files or
  // processes (aten::from_file, aten::save, rpc, c10d) unless
  // script_file_ops_allowed(). No code of the file runs before that check.
  ScriptedModel(const std::string& path, const std::string& owner);
  ~ScriptedModel() override;
  torch::Tensor forward(const torch::Tensor& inputs) override;
  void train(bool on = true) override;

  torch::jit::Module& script() { return script_; }
  const std::string& path() const { return path_; }
  // The SHA-256 (hex) of the file's bytes as loaded: what checkpoints record
  // so that resume, export and predict notice other code under the same path.
  const std::string& sha256() const { return sha256_; }

 private:
  torch::jit::Module script_;
  std::string path_;
  std::string sha256_;  // where owner_ was (never read): the layout of API 2.1 stays
};

}  // namespace skein
