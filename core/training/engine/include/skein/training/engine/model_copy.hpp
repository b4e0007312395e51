#pragma once
// A model's files written from copies of its tensors: what a checkpoint
// written in the background (checkpoint_writer.hpp) takes at a step
// boundary, so that training goes on while the files are written.
#include <functional>
#include <memory>
#include <vector>

#include <torch/nn/module.h>
#include <torch/serialize/output-archive.h>

#include "skein/detail/export.hpp"
#include "skein/training/checkpoint/state_dict_io.hpp"

namespace skein::core {

// Module::save's layout of `module` (its parameters, buffers and
// serializable children, by name) into `archive`, each tensor t of it as
// tensor_of(t): torch::save(model) writes the same with tensor_of the identity.
SKEIN_EXPORT void write_module_archive(const torch::nn::Module& module, torch::serialize::OutputArchive& archive,
                                       const std::function<torch::Tensor(const torch::Tensor&)>& tensor_of);

// CPU copies of a model's parameters and buffers (each tensor once, tied
// ones too), and the files that hold them. model.pt is laid out as the
// default Module::save lays it out (every model of ours uses it); a module
// whose save() is overridden would be written in that layout all the same.
struct ModelCopy {
  std::shared_ptr<torch::serialize::OutputArchive> archive;  // model.pt: as torch::save(model) writes it
  StateDict named;                         // model_state_dict.pt's entries
  std::vector<torch::Tensor> parameters;   // model.parameters()' copies, in order
};
SKEIN_EXPORT ModelCopy copy_model(const torch::nn::Module& model);

}  // namespace skein::core
