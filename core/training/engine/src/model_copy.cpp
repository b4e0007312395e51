#include "skein/training/engine/model_copy.hpp"

#include <unordered_map>

#include <torch/utils.h>

namespace skein::core {

void write_module_archive(const torch::nn::Module& module, torch::serialize::OutputArchive& archive,
                          const std::function<torch::Tensor(const torch::Tensor&)>& tensor_of) {
  for (const auto& p : module.named_parameters(/*recurse=*/false)) archive.write(p.key(), tensor_of(p.value()));
  for (const auto& b : module.named_buffers(/*recurse=*/false))
    archive.write(b.key(), tensor_of(b.value()), /*is_buffer=*/true);
  for (const auto& child : module.named_children()) {
    if (!child.value()->is_serializable()) continue;
    torch::serialize::OutputArchive archive_of_child(archive.compilation_unit());
    write_module_archive(*child.value(), archive_of_child, tensor_of);
    archive.write(child.key(), archive_of_child);
  }
}

ModelCopy copy_model(const torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  ModelCopy copy;
  std::unordered_map<const void*, torch::Tensor> copies;  // by the original's TensorImpl
  auto copy_of = [&](const torch::Tensor& t) {
    auto& c = copies[t.unsafeGetTensorImpl()];
    if (!c.defined()) {
      c = t.detach().to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true);
      if (t.requires_grad()) c.requires_grad_();  // as saved: a parameter that trains loads as one
    }
    return c;
  };
  for (const auto& p : model.named_parameters()) {
    copy.named.emplace_back(p.key(), copy_of(p.value()));
    copy.parameters.push_back(copy_of(p.value()));
  }
  for (const auto& b : model.named_buffers()) copy.named.emplace_back(b.key(), copy_of(b.value()));
  copy.archive = std::make_shared<torch::serialize::OutputArchive>();
  write_module_archive(model, *copy.archive, copy_of);
  return copy;
}

}  // namespace skein::core
