#include "skein/scripted_model.hpp"

#include <sys/stat.h>

#include <torch/csrc/jit/serialization/import.h>

#include "skein/errors.hpp"

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

}  // namespace

ScriptedModel::ScriptedModel(const std::string& path, const std::string& owner) : path_(path), owner_(owner) {
  struct stat st {};
  if (path.empty()) throw ConfigError(owner + ": option 'path' is empty (a file saved by torch.jit.save)");
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw ConfigError(owner + ": option 'path': no such file '" + path + "'");
  try {
    script_ = torch::jit::load(path);
  } catch (const std::exception& e) {
    throw ConfigError(owner + ": '" + path + "' is not a TorchScript module saved by torch.jit.save (" +
                      first_line(e.what()) + ")");
  }
  auto forward = script_.find_method("forward");
  if (!forward) throw ConfigError(owner + ": the TorchScript module in '" + path + "' has no forward method");
  const auto& schema = forward->function().getSchema();
  const auto& args = schema.arguments();
  std::size_t required = 0;
  for (std::size_t i = 1; i < args.size(); ++i)
    if (!args[i].default_value()) ++required;
  const bool one_tensor = args.size() >= 2 && required <= 1 &&
                          args[1].type()->kind() == c10::TypeKind::TensorType;
  const bool returns_tensor = schema.returns().size() == 1 &&
                              schema.returns()[0].type()->kind() == c10::TypeKind::TensorType;
  if (!one_tensor || !returns_tensor)
    throw ConfigError(owner + ": the forward of '" + path + "' is '" + signature(schema) +
                      "'; skein calls forward(x: Tensor) -> Tensor");
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
