#include "skein/io/exported_model.hpp"

#include <torch/version.h>

#include "skein/errors.hpp"
#include "skein/torch_compat/export_schema.hpp"

#if SKEIN_TORCH_EXPORT_SCHEMA
#include <cstring>
#include <limits>
#include <set>
#include <sstream>

#include <caffe2/serialize/inline_container.h>

#include "pt2_graph.hpp"
#include "pt2_rewrite.hpp"
#include "pt2_types.hpp"
#include "program_file.hpp"
#include "skein/io/operator_libraries.hpp"
#include "skein/io/script_operators.hpp"
#include "skein/io/scripted_model.hpp"
#endif

namespace skein {

#if SKEIN_TORCH_EXPORT_SCHEMA

namespace ex = torch::_export;
namespace spec = torch::_export::archive_spec;

namespace pt2 {
// One dimension of the user input: a size, or a range of a torch.export.Dim.
struct InputDim {
  enum Kind { fixed, ranged, unchecked } kind = unchecked;  // unchecked: an expression of a Dim (2*batch)
  std::int64_t min = 0, max = std::numeric_limits<std::int64_t>::max();
};
}  // namespace pt2
using pt2::InputDim;

namespace {

std::string record_text(caffe2::serialize::PyTorchStreamReader& reader, const std::string& name) {
  auto [data, size] = reader.getRecord(name);
  return std::string(static_cast<const char*>(data.get()), size);
}

std::vector<std::int64_t> ints_of(const std::vector<ex::SymInt>& v, const std::string& what) {
  std::vector<std::int64_t> r;
  for (const auto& s : v) {
    if (s.tag() != ex::SymInt::Tag::AS_INT) throw std::runtime_error(what + " has a symbolic size");
    r.push_back(s.get_as_int());
  }
  return r;
}

// The elements of the storage a tensor of `sizes`, `strides` and `offset`
// reaches (its last element's position + 1; 0 when it has none), refused
// where the metadata is negative or does not fit 64 bits.
std::int64_t storage_span(const std::vector<std::int64_t>& sizes, const std::vector<std::int64_t>& strides,
                          std::int64_t offset, std::int64_t& numel, const std::string& what) {
  if (sizes.size() != strides.size() || offset < 0)
    throw std::runtime_error(what + " has tensor metadata of " + std::to_string(sizes.size()) + " sizes and " +
                             std::to_string(strides.size()) + " strides at offset " + std::to_string(offset));
  numel = 1;
  std::int64_t last = offset;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::int64_t step = 0;
    if (sizes[i] < 0 || strides[i] < 0 || __builtin_mul_overflow(numel, sizes[i], &numel) ||
        (sizes[i] > 0 && (__builtin_mul_overflow(sizes[i] - 1, strides[i], &step) ||
                          __builtin_add_overflow(last, step, &last))))
      throw std::runtime_error(what + " has sizes or strides that are negative or overflow 64 bits");
  }
  return numel == 0 ? 0 : last + 1;
}

// A tensor from its stored bytes (the storage as saved) and metadata. The
// record is read only when its declared size is what the metadata needs (a
// crafted archive's 3 GiB of zeros behind a small tensor is never inflated),
// and no tensor has more elements than its record stores (a view with
// strides of 0 is not made into gigabytes by clone()).
torch::Tensor stored_tensor(caffe2::serialize::PyTorchStreamReader& reader, const std::string& record,
                            const ex::TensorMeta& meta, const std::string& what) {
  const auto dtype = pt2::to_c10(meta.get_dtype());
  const auto item = static_cast<std::int64_t>(c10::elementSize(dtype));
  const auto sizes = ints_of(meta.get_sizes(), what);
  const auto strides = ints_of(meta.get_strides(), what);
  const auto offset = ints_of({meta.get_storage_offset()}, what).at(0);
  std::int64_t numel = 0;
  const std::int64_t span = storage_span(sizes, strides, offset, numel, what);
  if (!reader.hasRecord(record)) throw std::runtime_error(what + " has no record " + record);
  const auto declared = static_cast<std::int64_t>(reader.getRecordSize(record));
  const std::int64_t count = declared / item;
  if (numel > count)
    throw std::runtime_error(what + " declares " + std::to_string(numel) + " elements over " +
                             std::to_string(count) + " stored (overlapping strides); Skein trains tensors whose "
                             "elements are stored each");
  std::int64_t needed = 0;
  if (__builtin_mul_overflow(span, item, &needed) || declared < needed)
    throw std::runtime_error(what + ": " + std::to_string(declared) + " bytes do not hold a tensor of its shape");
  if (declared > needed)
    throw std::runtime_error(what + ": its record holds " + std::to_string(declared) + " bytes where its tensor "
                             "metadata needs " + std::to_string(needed) + " (a view of a larger tensor: export a "
                             ".clone() of it)");
  auto storage = torch::empty({count}, torch::TensorOptions().dtype(dtype));
  if (count > 0) reader.getRecord(record, storage.data_ptr(), static_cast<std::size_t>(count * item));
  return storage.as_strided(sizes, strides, offset).clone();
}

// The dimensions the program was exported for, of its tensor `input`: fixed
// sizes, and the ranges of torch.export.Dims (an expression of a Dim, such
// as 2*batch, is left to the operators to check).
std::vector<InputDim> input_dims_of(const ex::ExportedProgram& ep, const std::string& input) {
  std::vector<InputDim> dims;
  const auto& values = ep.get_graph_module().get_graph().get_tensor_values();
  const auto found = values.find(input);
  if (found == values.end()) return dims;
  const auto& ranges = ep.get_range_constraints();
  for (const auto& size : found->second.get_sizes()) {
    InputDim d;
    if (size.tag() == ex::SymInt::Tag::AS_INT) {
      d.kind = InputDim::fixed;
      d.min = d.max = size.get_as_int();
    } else if (size.tag() == ex::SymInt::Tag::AS_EXPR) {
      std::string symbol = size.get_as_expr().get_expr_str();  // "s77", or "Symbol('s77', positive=True, ...)"
      if (symbol.rfind("Symbol('", 0) == 0) symbol = symbol.substr(8, symbol.find('\'', 8) - 8);
      if (const auto range = ranges.find(symbol); range != ranges.end()) {
        d.kind = InputDim::ranged;
        d.min = range->second.get_min_val().value_or(0);
        d.max = range->second.get_max_val().value_or(d.max);
      }
    }
    dims.push_back(d);
  }
  return dims;
}

// `name` ("features.0.weight") split at its last dot, the module above it
// made (plain torch::nn::Modules) as needed.
std::pair<torch::nn::Module*, std::string> owner_of(torch::nn::Module& root, const std::string& name) {
  torch::nn::Module* m = &root;
  std::size_t from = 0;
  for (auto dot = name.find('.'); dot != std::string::npos; from = dot + 1, dot = name.find('.', from)) {
    const std::string part = name.substr(from, dot - from);
    auto children = m->named_children();
    if (const auto* child = children.find(part)) {
      m = child->get();
    } else {
      auto made = std::make_shared<torch::nn::Module>(part);
      m->register_module(part, made);
      m = made.get();
    }
  }
  return {m, name.substr(from)};
}

}  // namespace

struct ExportedModel::Program {
  // What each placeholder of the graph is fed.
  struct Input {
    enum Kind { parameter, buffer, hidden_buffer, constant, user } kind = constant;
    std::string name;   // parameter and buffer: the module's name for it
    c10::IValue value;  // constant: a tensor constant or a number
  };
  std::string archive;           // the bytes loaded
  std::string program_record;    // models/NAME.json
  std::string weights_config_record;
  std::string constants_config_record;
  nlohmann::json weights_config;  // {"config": {name: {"path_name", "tensor_meta", ...}}}
  std::unique_ptr<pt2::Graph> graph;
  std::vector<Input> inputs;
  std::size_t user_output = 0;
  std::vector<std::pair<std::size_t, std::string>> buffer_writes;  // output index, buffer
  std::map<std::string, torch::Tensor> hidden_buffers;               // non-persistent
  std::map<std::string, std::string> tied;  // a parameter's second name -> the parameter it is
  std::vector<InputDim> input_dims;  // the user input's
  std::string owner;

  // Reads the archive's program, weights and constants, and registers the
  // weights in `module`. Throws std::runtime_error saying what is wrong.
  void load(torch::nn::Module& module);
};

ExportedModel::ExportedModel(const std::string& path, const std::string& owner)
    : program_(std::make_unique<Program>()), path_(path) {
  auto refuse = [&](const std::string& why) {
    throw OptionError("path", owner + ": option 'path': '" + path + "' " + why);
  };
  ProgramFile file = read_program_file(path, owner, "a .pt2 archive written by torch.export.save");
  program_->archive = std::move(file.bytes);
  sha256_ = std::move(file.sha256);
  try {
    program_->load(*this);
  } catch (const std::exception& e) {
    refuse(first_line(e.what()));
  }
  program_->owner = owner;
  if (!script_file_ops_allowed()) {
    const auto& ops = program_->graph->operators();
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (script_operator_rule(ops[i]) != ScriptOperatorRule::computes && !loaded_custom_operator(ops[i]))
        refuse("has node '" + program_->graph->first_callers()[i] + "' calling " + ops[i] +
               ", which reaches files or processes; an exported program runs with your rights: if you trust "
               "this one, allow it with --allow-script-file-ops");
  }
}

void ExportedModel::Program::load(torch::nn::Module& module) {
  Program& program = *this;
  std::istringstream in(program.archive);
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader;
  try {
    reader = std::make_unique<caffe2::serialize::PyTorchStreamReader>(&in);
  } catch (const c10::Error& e) {
    // libtorch's zip reader adds sentences of advice about checkpoints: its first one says what is wrong.
    std::string what = first_line(e.what());
    what = what.substr(0, what.find(". "));
    throw std::runtime_error("is not a .pt2 archive written by torch.export.save (" + what + ")");
  }
  const std::string models_dir(spec::MODELS_DIR);
  std::vector<std::string> programs;
  for (const auto& r : reader->getAllRecords())
    if (r.rfind(models_dir, 0) == 0 && r.size() > models_dir.size() + 5 && r.substr(r.size() - 5) == ".json")
      programs.push_back(r);
  if (programs.size() != 1)
    throw std::runtime_error("is not a .pt2 archive of one program written by torch.export.save (" +
                             std::to_string(programs.size()) + " programs under " + models_dir + ")");
  const std::string name = programs[0].substr(models_dir.size(), programs[0].size() - models_dir.size() - 5);
  ex::ExportedProgram ep;
  try {
    nlohmann::json::parse(record_text(*reader, programs[0])).get_to(ep);
  } catch (const std::exception& e) {
    throw std::runtime_error("holds a program Skein cannot read (" + programs[0] + ": " + first_line(e.what()) + ")");
  }
  const auto& version = ep.get_schema_version();
  if (version.get_major() != SKEIN_EXPORT_SCHEMA_MAJOR)
    throw std::runtime_error("was written with torch.export schema " + std::to_string(version.get_major()) + "." +
                             std::to_string(version.get_minor()) + " (torch " + ep.get_torch_version() +
                             "); this skein reads schema " + std::to_string(SKEIN_EXPORT_SCHEMA_MAJOR) +
                             ".x (libtorch " + TORCH_VERSION + ")");

  auto payload = [&](const std::string& record) {
    nlohmann::json j = reader->hasRecord(record) ? nlohmann::json::parse(record_text(*reader, record))
                                                 : nlohmann::json{{"config", nlohmann::json::object()}};
    return j;
  };
  program.program_record = programs[0];
  program.weights_config_record = pt2::archive_path(spec::WEIGHTS_CONFIG_FILENAME_FORMAT, name);
  program.constants_config_record = pt2::archive_path(spec::CONSTANTS_CONFIG_FILENAME_FORMAT, name);
  const std::string weights_dir(spec::WEIGHTS_DIR), constants_dir(spec::CONSTANTS_DIR);
  program.weights_config = payload(program.weights_config_record);
  const ex::PayloadConfig weights = program.weights_config.get<ex::PayloadConfig>();
  const ex::PayloadConfig constants = payload(program.constants_config_record).get<ex::PayloadConfig>();
  auto stored = [&](const ex::PayloadConfig& config, const std::string& dir, const std::string& key) {
    const auto found = config.get_config().find(key);
    if (found == config.get_config().end()) throw std::runtime_error("has no stored value for '" + key + "'");
    const auto& meta = found->second;
    if (meta.get_use_pickle() || !meta.get_tensor_meta())
      throw std::runtime_error("stores '" + key + "' pickled; Skein reads raw tensor payloads (torch.export.save's default)");
    return stored_tensor(*reader, dir + meta.get_path_name(), *meta.get_tensor_meta(), "'" + key + "'");
  };

  const auto& gm = ep.get_graph_module();
  const auto& signature = gm.get_signature();
  std::set<std::string> buffer_args;
  std::map<std::string, std::string> tied_to;  // a record -> the first parameter stored there
  int user_inputs = 0;
  for (const auto& spec : signature.get_input_specs()) {
    Input input;
    using T = ex::InputSpec::Tag;
    switch (spec.tag()) {
      case T::PARAMETER: {
        input.kind = Input::parameter;
        input.name = spec.get_parameter().get_parameter_name();
        // A parameter stored where an earlier one is (tied weights: b.weight
        // = a.weight) stays that one parameter, fed to both placeholders.
        const auto entry = weights.get_config().find(input.name);
        if (entry != weights.get_config().end()) {
          const auto first = tied_to.find(entry->second.get_path_name());
          if (first != tied_to.end()) {
            program.tied[input.name] = first->second;
            input.name = first->second;
            break;
          }
          tied_to.emplace(entry->second.get_path_name(), input.name);
        }
        auto t = stored(weights, weights_dir, input.name);
        const bool grad = t.is_floating_point() || t.is_complex();
        auto [owner, leaf] = owner_of(module, input.name);
        owner->register_parameter(leaf, t, grad && weights.get_config().at(input.name).get_tensor_meta()->get_requires_grad());
        break;
      }
      case T::BUFFER: {
        const auto& b = spec.get_buffer();
        input.name = b.get_buffer_name();
        buffer_args.insert(b.get_arg().get_name());
        if (b.get_persistent()) {
          input.kind = Input::buffer;
          auto [owner, leaf] = owner_of(module, input.name);
          owner->register_buffer(leaf, stored(weights, weights_dir, input.name));
        } else {
          input.kind = Input::hidden_buffer;
          program.hidden_buffers[input.name] = stored(constants, constants_dir, input.name);
        }
        break;
      }
      case T::TENSOR_CONSTANT: {
        const std::string& key = spec.get_tensor_constant().get_tensor_constant_name();
        input.value = stored(constants, constants_dir, key);
        break;
      }
      case T::CONSTANT_INPUT: {
        const auto& v = spec.get_constant_input().get_value();
        using C = ex::ConstantValue::Tag;
        if (v.tag() == C::AS_INT) input.value = v.get_as_int();
        else if (v.tag() == C::AS_FLOAT) input.value = v.get_as_float().get();
        else if (v.tag() == C::AS_BOOL) input.value = v.get_as_bool();
        else if (v.tag() == C::AS_STRING) input.value = v.get_as_string();
        break;
      }
      case T::USER_INPUT:
        if (spec.get_user_input().get_arg().tag() != ex::Argument::Tag::AS_TENSOR)
          throw std::runtime_error("has a forward whose inputs are not all tensors; skein calls forward(x: Tensor) -> Tensor");
        input.kind = Input::user;
        program.input_dims = input_dims_of(ep, spec.get_user_input().get_arg().get_as_tensor().get_name());
        ++user_inputs;
        break;
      default:
        throw std::runtime_error("has an input of a kind Skein does not feed (a custom object or effect token)");
    }
    program.inputs.push_back(std::move(input));
  }
  if (user_inputs != 1)
    throw std::runtime_error("has a forward of " + std::to_string(user_inputs) +
                             " tensor inputs; skein calls forward(x: Tensor) -> Tensor (export with args=(x,))");
  int user_outputs = 0;
  const auto& outputs = signature.get_output_specs();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    using T = ex::OutputSpec::Tag;
    if (outputs[i].tag() == T::USER_OUTPUT) {
      if (outputs[i].get_user_output().get_arg().tag() != ex::Argument::Tag::AS_TENSOR)
        throw std::runtime_error("has a forward that returns something other than a tensor; skein calls forward(x: Tensor) -> Tensor");
      program.user_output = i;
      ++user_outputs;
    } else if (outputs[i].tag() == T::BUFFER_MUTATION) {
      program.buffer_writes.emplace_back(i, outputs[i].get_buffer_mutation().get_buffer_name());
    } else {
      throw std::runtime_error("has an output of a kind Skein does not train with (a loss, gradient or input mutation; "
                               "export the module's forward with torch.export.export)");
    }
  }
  if (user_outputs != 1)
    throw std::runtime_error("has a forward of " + std::to_string(user_outputs) +
                             " outputs; skein calls forward(x: Tensor) -> Tensor");
  program.graph = std::make_unique<pt2::Graph>(gm.get_graph(), buffer_args);
}

ExportedModel::~ExportedModel() = default;

namespace {

// Refuses inputs the program was not exported for, as torch.export's own
// module does (its Dims' ranges and fixed sizes), in one line.
void check_input_shape(const std::vector<InputDim>& dims, const torch::Tensor& inputs, const std::string& owner,
                       const std::string& path) {
  if (dims.empty()) return;
  auto refuse = [&](const std::string& why) {
    throw std::invalid_argument(owner + ": inputs of shape " + c10::str(inputs.sizes()) + " do not fit '" + path +
                                "': " + why);
  };
  if (static_cast<std::size_t>(inputs.dim()) != dims.size())
    refuse("it was exported for inputs of " + std::to_string(dims.size()) + " dimensions");
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::int64_t size = inputs.size(static_cast<std::int64_t>(i));
    if (dims[i].kind == InputDim::unchecked || (size >= dims[i].min && size <= dims[i].max)) continue;
    if (dims[i].kind == InputDim::fixed)
      refuse("dimension " + std::to_string(i) + " is " + std::to_string(size) + " where it was exported with " +
             std::to_string(dims[i].min) + " (give it a torch.export.Dim to vary it)");
    refuse("dimension " + std::to_string(i) + " is " + std::to_string(size) + ", outside the range [" +
           std::to_string(dims[i].min) + ", " + std::to_string(dims[i].max) + "] of its torch.export.Dim");
  }
}

}  // namespace

torch::Tensor ExportedModel::forward(const torch::Tensor& inputs) {
  check_input_shape(program_->input_dims, inputs, program_->owner, path_);
  const auto params = named_parameters();
  const auto buffers = named_buffers();
  std::vector<c10::IValue> in;
  in.reserve(program_->inputs.size());
  for (const auto& input : program_->inputs) {
    switch (input.kind) {
      case Program::Input::parameter: in.emplace_back(params[input.name]); break;
      case Program::Input::buffer: in.emplace_back(buffers[input.name]); break;
      case Program::Input::hidden_buffer: {
        auto& t = program_->hidden_buffers[input.name];
        if (t.device() != inputs.device()) t = t.to(inputs.device());
        in.emplace_back(t);
        break;
      }
      case Program::Input::user: in.emplace_back(inputs); break;
      case Program::Input::constant:
        if (input.value.isTensor() && input.value.toTensor().device() != inputs.device())
          const_cast<Program::Input&>(input).value = input.value.toTensor().to(inputs.device());
        in.push_back(input.value);
        break;
    }
  }
  auto out = program_->graph->run(std::move(in), is_training());
  if (is_training()) {
    torch::NoGradGuard no_grad;
    for (const auto& [index, name] : program_->buffer_writes) {
      if (auto* b = buffers.find(name)) b->copy_(out[index].toTensor());
      else program_->hidden_buffers[name].copy_(out[index].toTensor());
    }
  }
  return out[program_->user_output].toTensor();
}

std::vector<std::string> ExportedModel::operators() const { return program_->graph->operators(); }

const std::map<std::string, std::string>& ExportedModel::tied_parameters() const { return program_->tied; }

const std::string& ExportedModel::eval_mode_evidence() const { return program_->graph->eval_export_evidence(); }

std::string ExportedModel::archive_with_current_weights(const std::vector<InputStep>& input_steps) const {
  std::istringstream in(program_->archive);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  std::map<std::string, std::string> replaced;  // record path -> new bytes
  nlohmann::json config = program_->weights_config;
  auto store = [&](const std::string& name, const torch::Tensor& value) {
    auto* entry = config["config"].contains(name) ? &config["config"][name] : nullptr;
    if (!entry) return;
    const auto t = value.detach().to(torch::kCPU).contiguous();
    auto& meta = (*entry)["tensor_meta"];
    nlohmann::json strides = nlohmann::json::array();
    for (auto s : t.strides()) strides.push_back(nlohmann::json::object({{"as_int", s}}));
    meta["strides"] = strides;
    meta["storage_offset"] = nlohmann::json::object({{"as_int", 0}});
    meta["dtype"] = static_cast<int>(pt2::to_schema(t.scalar_type()));
    replaced[std::string(spec::WEIGHTS_DIR) + (*entry)["path_name"].get<std::string>()] =
        std::string(static_cast<const char*>(t.data_ptr()), t.nbytes());
  };
  const auto params = named_parameters();
  for (const auto& p : params) store(p.key(), p.value());
  for (const auto& [second, first] : program_->tied) store(second, params[first]);  // one record, as it was
  for (const auto& b : named_buffers()) store(b.key(), b.value());
  replaced[program_->weights_config_record] = config.dump();
  auto program = nlohmann::json::parse(record_text(reader, program_->program_record));
  pt2::to_eval_mode(program, program_->graph->eval_skipped_nodes(), program_->graph->mode_arguments());
  if (!input_steps.empty()) {
    auto constants = reader.hasRecord(program_->constants_config_record)
                         ? nlohmann::json::parse(record_text(reader, program_->constants_config_record))
                         : nlohmann::json{{"config", nlohmann::json::object()}};
    pt2::prepend_input_steps(program, constants, replaced, input_steps);
    replaced[program_->constants_config_record] = constants.dump();
  }
  replaced[program_->program_record] = program.dump();

  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&out](const void* data, std::size_t size) {
    out.append(static_cast<const char*>(data), size);
    return size;
  });
  for (const auto& record : reader.getAllRecords()) {
    if (record == ".data/version" || record == "version" || record == "byteorder" || record == ".data/serialization_id")
      continue;  // the writer writes its own
    if (const auto found = replaced.find(record); found != replaced.end()) {
      writer.writeRecord(record, found->second.data(), found->second.size());
      replaced.erase(found);
    } else {
      auto [data, size] = reader.getRecord(record);
      writer.writeRecord(record, data.get(), size);
    }
  }
  for (const auto& [record, bytes] : replaced) writer.writeRecord(record, bytes.data(), bytes.size());  // new ones
  writer.writeEndOfFile();
  return out;
}

#else  // libtorch without torch.export's schema

struct ExportedModel::Program {};

ExportedModel::ExportedModel(const std::string& path, const std::string& owner) : path_(path) {
  throw OptionError("path", owner + ": '" + path + "': a .pt2 program needs a libtorch that ships torch.export's "
                    "program schema (PyPI's torch 2.x); this skein is built with libtorch " TORCH_VERSION
                    " (use a TorchScript file and the torchscript model there)");
}
ExportedModel::~ExportedModel() = default;
torch::Tensor ExportedModel::forward(const torch::Tensor&) { return {}; }
std::vector<std::string> ExportedModel::operators() const { return {}; }
const std::map<std::string, std::string>& ExportedModel::tied_parameters() const {
  static const std::map<std::string, std::string> none;
  return none;
}
const std::string& ExportedModel::eval_mode_evidence() const {
  static const std::string none;
  return none;
}
std::string ExportedModel::archive_with_current_weights(const std::vector<InputStep>&) const { return {}; }

#endif

}  // namespace skein
