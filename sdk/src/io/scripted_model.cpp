#include "skein/io/scripted_model.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <torch/csrc/jit/serialization/import.h>

#include "script_scan.hpp"
#include "program_file.hpp"
#include "skein/detail/sdk_env_vars.hpp"
#include "skein/errors.hpp"
#include "skein/io/input_file.hpp"

namespace skein {

namespace {

// Registers the parameters and buffers of `from` (the same tensors, not
// copies) in `into`, and a plain torch::nn::Module for each submodule, so
// that names, order and nesting match the scripted module's.
void mirror(const torch::jit::Module& from, torch::nn::Module& into) {
  for (const auto& p : from.named_parameters(/*recurse=*/false))
    into.register_parameter(p.name, p.value, p.value.requires_grad());
  for (const auto& b : from.named_buffers(/*recurse=*/false)) into.register_buffer(b.name, b.value);
  for (const auto& c : from.named_children()) {
    auto child = std::make_shared<torch::nn::Module>(c.name);
    mirror(c.value, *child);
    into.register_module(c.name, child);
  }
}

std::string signature(const c10::FunctionSchema& schema) {
  std::ostringstream s;
  s << schema;
  return s.str();
}

// A module that reaches files or processes is refused unless the user allows
// it (the refusal says how): the file's code runs with the user's rights.
void refuse_outside_operators(const std::string& bytes, const std::string& path, const std::string& owner) {
  std::optional<ScriptOperatorUse> use;
  try {
    use = find_outside_operator(bytes);
  } catch (const std::exception& e) {
    throw OptionError("path", owner + ": option 'path': '" + path + "' is not a TorchScript module saved by torch.jit.save (" +
                      first_line(e.what()) + ")");
  }
  if (use)
    throw OptionError("path", owner + ": option 'path': '" + path + "': " + use->function + " calls " + use->op +
                      ", which reaches files or processes; a TorchScript file is a program that runs with your "
                      "rights: if you trust this one, allow it with --allow-script-file-ops (or " +
                      env::kAllowScriptFileOps + "=1)");
}

}  // namespace

bool script_file_ops_allowed() {
  const char* v = std::getenv(env::kAllowScriptFileOps);
  return v && std::string(v) == "1";
}

torch::jit::Module load_script_module(const std::string& path, const std::string& owner, int tensor_args,
                                      std::string* sha256) {
  const ProgramFile file = read_program_file(path, owner, "a TorchScript module saved by torch.jit.save");
  if (sha256) *sha256 = file.sha256;
  const std::string& bytes = file.bytes;
  if (!script_file_ops_allowed()) refuse_outside_operators(bytes, path, owner);
  torch::jit::Module script;
  try {
    std::istringstream in(bytes);
    script = torch::jit::load(in);
  } catch (const std::exception& e) {
    throw OptionError("path", owner + ": option 'path': '" + path + "' is not a TorchScript module saved by torch.jit.save (" +
                      first_line(e.what()) + ")");
  }
  auto forward = script.find_method("forward");
  if (!forward) throw OptionError("path", owner + ": option 'path': the TorchScript module in '" + path + "' has no forward method");
  const auto& schema = forward->function().getSchema();
  const auto& args = schema.arguments();
  const auto wanted = static_cast<std::size_t>(tensor_args);
  std::size_t required = 0;
  for (std::size_t i = 1; i < args.size(); ++i)
    if (!args[i].default_value()) ++required;
  bool tensors = args.size() >= 1 + wanted && required <= wanted;
  for (std::size_t i = 1; tensors && i <= wanted; ++i) tensors = args[i].type()->kind() == c10::TypeKind::TensorType;
  const bool returns_tensor = schema.returns().size() == 1 &&
                              schema.returns()[0].type()->kind() == c10::TypeKind::TensorType;
  if (!tensors || !returns_tensor)
    throw OptionError("path", owner + ": option 'path': the forward of '" + path + "' is '" + signature(schema) +
                      "'; skein calls " +
                      (tensor_args == 1 ? "forward(x: Tensor) -> Tensor" : "forward(outputs: Tensor, targets: Tensor) -> Tensor"));
  return script;
}

ScriptedModel::ScriptedModel(const std::string& path, const std::string& owner) : path_(path) {
  script_ = load_script_module(path, owner, 1, &sha256_);  // in the body: sha256_ is constructed by now
  mirror(script_, *this);
}

ScriptedModel::~ScriptedModel() = default;

torch::Tensor ScriptedModel::forward(const torch::Tensor& inputs) {
  return script_.forward({inputs}).toTensor();
}

void ScriptedModel::train(bool on) {
  Model::train(on);
  script_.train(on);
}

}  // namespace skein
