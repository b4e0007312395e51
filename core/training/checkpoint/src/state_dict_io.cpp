#include "skein/training/checkpoint/state_dict_io.hpp"

#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>  // writeArchiveAndTensors
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include "skein/errors.hpp"
#include "skein/io/torch_file.hpp"

namespace skein::core {
StateDict read_state_dict(const std::string& path) {
  c10::IValue value;
  try {
    value = read_torch_save(path);
  } catch (const std::exception& e) {  // a missing file, a FIFO: refused before it is opened
    throw ConfigError(std::string(e.what()) + "; expected a state dict");
  }
  if (!value.isGenericDict())
    throw ConfigError("'" + path + "' holds a " + value.tagKind() + ", not a state dict {name: tensor}");
  StateDict dict;
  for (const auto& item : value.toGenericDict()) {
    if (!item.key().isString() || !item.value().isTensor())
      throw ConfigError("'" + path + "' is not a state dict: it maps " + item.key().tagKind() + " to " +
                        item.value().tagKind() + ", not names to tensors");
    dict.emplace_back(item.key().toStringRef(), item.value().toTensor());
  }
  return dict;
}

StateDict named_tensors(const torch::nn::Module& model) {
  StateDict named;
  for (const auto& p : model.named_parameters()) named.emplace_back(p.key(), p.value());
  for (const auto& b : model.named_buffers()) named.emplace_back(b.key(), b.value());
  return named;
}

void write_state_dict(torch::nn::Module& model, std::ostream& out) { write_state_dict(named_tensors(model), out); }

void write_state_dict(const StateDict& named, std::ostream& out) {
  c10::Dict<std::string, torch::Tensor> dict;
  // CPU copies: the file loads in a Python without CUDA (or with another device).
  for (const auto& [name, tensor] : named) dict.insert(name, tensor.detach().cpu());
  // torch::pickle_save's archive, but with a plain dict: pickle_save tags a
  // typed dict with torch.jit._pickle.restore_type_tag, a global that
  // Python's torch.load(..., weights_only=True) (the default since 2.6)
  // refuses. Untagged, it is what torch.save(dict) writes.
  std::vector<char> pickle;
  torch::jit::Pickler pickler([&pickle](const char* data, std::size_t size) { pickle.insert(pickle.end(), data, data + size); },
                              /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
                              /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(c10::IValue(dict));
  pickler.stop();
  caffe2::serialize::PyTorchStreamWriter writer([&out](const void* data, std::size_t size) {
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    return out ? size : 0;
  });
  torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(), writer);
  writer.writeEndOfFile();
}

std::string state_dict_bytes(torch::nn::Module& model) {
  std::ostringstream out;
  write_state_dict(model, out);
  return out.str();
}

void load_state_dict(torch::nn::Module& model, const StateDict& dict, const std::string& where) {
  std::map<std::string, torch::Tensor> targets;
  for (const auto& p : model.named_parameters()) targets.emplace(p.key(), p.value());
  for (const auto& b : model.named_buffers()) targets.emplace(b.key(), b.value());
  std::vector<std::string> problems;
  std::set<std::string> seen;
  for (const auto& [name, tensor] : dict) {
    seen.insert(name);
    auto it = targets.find(name);
    if (it == targets.end()) {
      problems.push_back("'" + name + "' is not in the model");
    } else if (it->second.sizes() != tensor.sizes()) {
      std::ostringstream s;
      s << "'" << name << "' has shape " << tensor.sizes() << " in the file and " << it->second.sizes()
        << " in the model";
      problems.push_back(s.str());
    }
  }
  for (const auto& [name, tensor] : targets)
    if (!seen.count(name)) problems.push_back("'" + name + "' is missing from the file");
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += (all.empty() ? "" : "; ") + p;
    throw ConfigError(where + " does not fit the model: " + all);
  }
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : dict) {
    torch::Tensor& target = targets.at(name);
    target.copy_(tensor.to(target.scalar_type()));
  }
}

}  // namespace skein::core
