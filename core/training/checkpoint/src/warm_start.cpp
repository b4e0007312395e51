#include "skein/training/checkpoint/warm_start.hpp"

#include <map>
#include <set>
#include <sstream>

#include <boost/filesystem.hpp>
#include <caffe2/serialize/inline_container.h>

#include "skein/training/checkpoint/checkpoint_dir.hpp"
#include "skein/training/checkpoint/checkpoint_meta.hpp"
#include "skein/detail/run_files.hpp"
#include "skein/io/input_file.hpp"
#include "skein/training/checkpoint/state_dict_io.hpp"
#include "skein/errors.hpp"
#include "skein/io/exported_model.hpp"
#include "skein/io/scripted_model.hpp"
#include "skein/io/torch_file.hpp"

namespace fs = boost::filesystem;

namespace skein::core {

namespace {

// Where checkpoints of common recipes keep the model's state dict.
const char* const kNestedKeys[] = {"model_state_dict", "state_dict", "model"};
const std::string kDdpPrefix = "module.";

// "'a', 'b', 'c' and 4 more": a few names of a long list (quoted unless `quote` is false).
std::string some_of(const std::vector<std::string>& names, std::size_t shown = 3, bool quote = true) {
  const std::string q = quote ? "'" : "";
  std::string text;
  for (std::size_t i = 0; i < names.size() && i < shown; ++i) text += (i ? ", " : "") + q + names[i] + q;
  if (names.size() > shown) text += " and " + std::to_string(names.size() - shown) + " more";
  return text;
}

// "1 name", "3 names"; "entry" takes "entries".
std::string count_of(std::size_t n, const std::string& what) {
  if (n == 1) return "1 " + what;
  return std::to_string(n) + " " + (what.back() == 'y' ? what.substr(0, what.size() - 1) + "ies" : what + "s");
}

bool is_state_dict(const c10::IValue& value) {
  if (!value.isGenericDict() || value.toGenericDict().empty()) return false;
  for (const auto& item : value.toGenericDict())
    if (!item.key().isString() || !item.value().isTensor()) return false;
  return true;
}

StateDict state_dict_of(const c10::IValue& value) {
  StateDict dict;
  for (const auto& item : value.toGenericDict()) dict.emplace_back(item.key().toStringRef(), item.value().toTensor());
  return dict;
}

std::string key_text(const c10::IValue& key) {
  if (key.isString()) return "'" + key.toStringRef() + "'";
  std::ostringstream s;
  s << key;
  return s.str();
}

// The state dict in what torch.save wrote: the dict itself, or one under a
// key of kNestedKeys (the tutorial's {"model_state_dict": ..., "optimizer_state_dict": ...}).
StateDict state_dict_in(const c10::IValue& value, const std::string& file, WarmStartReport& report) {
  if (is_state_dict(value)) return state_dict_of(value);
  if (!value.isGenericDict())
    throw ConfigError("'" + file + "' holds a " + value.tagKind() + ", not a state dict {name: tensor}");
  const auto dict = value.toGenericDict();
  std::vector<std::string> keys;
  for (const auto& item : dict) keys.push_back(key_text(item.key()));
  for (const char* key : kNestedKeys) {
    for (const auto& item : dict) {
      if (!item.key().isString() || item.key().toStringRef() != key || !is_state_dict(item.value())) continue;
      report.notes.push_back("init_from: the state dict under '" + std::string(key) + "' of " + file + " (of its " +
                             count_of(keys.size(), "entry") + ": " + some_of(keys, 6, false) + ")");
      return state_dict_of(item.value());
    }
  }
  throw ConfigError("'" + file + "' is a dict (" + some_of(keys, 6, false) +
                    ") that is no state dict {name: tensor} and holds none under 'model_state_dict', "
                    "'state_dict' or 'model'");
}

// A TorchScript archive (torch.jit.save) has constants.pkl; torch.save's has not.
bool is_torchscript_archive(const std::string& file) {
  try {
    caffe2::serialize::PyTorchStreamReader reader(file);
    return reader.hasRecord("constants.pkl");
  } catch (const std::exception&) {
    return false;  // not a zip archive: read_torch_save says what it is
  }
}

// A torch.export archive (torch.export.save, skein export --format pt2) has archive_format.
bool is_pt2_archive(const std::string& file) {
  try {
    caffe2::serialize::PyTorchStreamReader reader(file);
    return reader.hasRecord("archive_format");
  } catch (const std::exception&) {
    return false;
  }
}

// The parameters and buffers of a module from Python, loaded as its model
// plugin loads it (its code checked before any of it runs).
StateDict module_state_dict(const Model& module, const std::string& what, WarmStartReport& report) {
  StateDict dict;
  for (const auto& p : module.named_parameters()) dict.emplace_back(p.key(), p.value().detach());
  for (const auto& b : module.named_buffers()) dict.emplace_back(b.key(), b.value().detach());
  report.notes.push_back("init_from: the parameters and buffers of " + what);
  return dict;
}

StateDict script_state_dict(const std::string& file, WarmStartReport& report) {
  return module_state_dict(ScriptedModel(file, run_key::kInitFrom), "the TorchScript module " + file, report);
}

StateDict read_weights(const std::string& file, WarmStartReport& report) {
  if (is_torchscript_archive(file)) return script_state_dict(file, report);
  if (is_pt2_archive(file))
    return module_state_dict(ExportedModel(file, run_key::kInitFrom), "the exported program " + file, report);
  c10::IValue value;
  try {
    value = read_torch_save(file);
  } catch (const std::exception& e) {
    throw ConfigError(std::string(e.what()) + "; expected a state dict");
  }
  return state_dict_in(value, file, report);
}

// DataParallel and DDP save their module's names with "module." in front.
void strip_ddp_prefix(StateDict& dict, const std::map<std::string, torch::Tensor>& targets,
                      WarmStartReport& report) {
  for (const auto& [name, tensor] : dict)
    if (name.rfind(kDdpPrefix, 0) != 0) return;
  for (const auto& [name, tensor] : targets)
    if (name.rfind(kDdpPrefix, 0) == 0) return;
  for (auto& entry : dict) entry.first.erase(0, kDdpPrefix.size());
  report.notes.push_back("init_from: removed the '" + kDdpPrefix + "' prefix of " + count_of(dict.size(), "name") +
                         " (a state dict saved from a DataParallel or DDP-wrapped model)");
}

bool is_batch_counter(const std::string& name) {
  const std::string counter = "num_batches_tracked";
  return name == counter || (name.size() > counter.size() &&
                             name.compare(name.size() - counter.size() - 1, std::string::npos, "." + counter) == 0);
}

}  // namespace

std::string state_dict_file_of(const std::string& source) {
  const fs::path p(source);
  if (fs::is_regular_file(p)) return source;
  if (fs::is_directory(p)) {
    if (fs::is_regular_file(p / checkpoint_files::kStateDict)) return (p / checkpoint_files::kStateDict).string();
    const std::string latest = find_model_checkpoint((p / run_files::kCheckpoints).string());
    if (!latest.empty()) return latest + "/" + checkpoint_files::kStateDict;
    throw ConfigError("init_from '" + source + "': a directory that is neither a skein checkpoint (no " +
                      checkpoint_files::kStateDict + ") nor a run with checkpoints");
  }
  if (fs::exists(p)) {  // a FIFO, a device: refused before anything reads it
    try {
      regular_file_size(source);
    } catch (const std::runtime_error& e) {
      throw ConfigError(std::string("init_from ") + e.what());
    }
  }
  throw ConfigError("init_from '" + source + "': no such file or directory");
}

WarmStartReport warm_start(torch::nn::Module& model, const WarmStartOptions& options) {
  const std::string where = "init_from '" + options.source + "'";
  const std::string file = state_dict_file_of(options.source);
  WarmStartReport report;
  StateDict dict;
  try {
    dict = read_weights(file, report);
  } catch (const ConfigError& e) {
    throw ConfigError(where + ": " + e.what());
  }

  std::map<std::string, torch::Tensor> targets;
  for (const auto& p : model.named_parameters()) targets.emplace(p.key(), p.value());
  for (const auto& b : model.named_buffers()) targets.emplace(b.key(), b.value());
  strip_ddp_prefix(dict, targets, report);

  std::vector<std::string> unknown, misshaped, missing, counters;
  std::set<std::string> in_file;
  for (const auto& [name, tensor] : dict) {
    in_file.insert(name);
    const auto it = targets.find(name);
    if (it == targets.end()) {
      unknown.push_back(name);
    } else if (it->second.sizes() != tensor.sizes()) {
      std::ostringstream s;
      s << "'" << name << "' (" << tensor.sizes() << " in the file, " << it->second.sizes() << " in the model)";
      misshaped.push_back(s.str());
    }
  }
  for (const auto& [name, tensor] : targets)
    if (!in_file.count(name)) (is_batch_counter(name) ? counters : missing).push_back(name);
  if (!counters.empty())
    report.notes.push_back("init_from: kept " + count_of(counters.size(), "BatchNorm counter") +
                           " (num_batches_tracked) of the new model, which the file does not hold");

  std::string problems;
  auto add = [&](const std::vector<std::string>& names, const std::string& what) {
    if (!names.empty()) problems += (problems.empty() ? "" : "; ") + std::to_string(names.size()) + " " + what + ": " + some_of(names);
  };
  if (!misshaped.empty())
    throw ConfigError(where + " does not fit the model: " + std::to_string(misshaped.size()) +
                      " of another shape: " + some_of(misshaped, 3, false));
  add(missing, "missing from the file");
  add(unknown, "not in the model");
  if (!problems.empty()) {
    if (options.strict)
      throw ConfigError(where + " does not fit the model: " + problems +
                        " (init_strict false loads the entries that fit)");
    report.skipped = where + ": init_strict is false: " + problems + "; those keep the new model's values";
  }

  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : dict) {
    const auto it = targets.find(name);
    if (it != targets.end()) it->second.copy_(tensor.to(it->second.scalar_type()));
  }
  return report;
}

}  // namespace skein::core
