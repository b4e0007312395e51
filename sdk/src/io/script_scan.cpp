#include "script_scan.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/serialization/import_read.h>
#include <torch/csrc/jit/serialization/import_source.h>

#include "skein/io/script_operators.hpp"

namespace skein {

namespace {

// Why the scanner refuses an operator (skein/io/script_operators.hpp), or
// nothing for one that only computes.
std::optional<std::string> refusal(const std::string& kind) {
  switch (script_operator_rule(kind)) {
    case ScriptOperatorRule::computes: return std::nullopt;
    case ScriptOperatorRule::reaches_outside: return kind;
    case ScriptOperatorRule::no_rule: break;
  }
  return kind + " (of an operator namespace skein's scanner has no rule for)";
}

// A value of a TorchBind class for processes or RPC (a process group, a
// worker), which methods called on it would reach.
bool outside_class(const c10::TypePtr& type) {
  auto cls = type->cast<c10::ClassType>();
  if (!cls || !cls->name()) return false;
  const std::string name = cls->name()->qualifiedName();
  for (const char* ns : {"__torch__.torch.classes.c10d.", "__torch__.torch.classes.dist_c10d.",
                         "__torch__.torch.classes.dist_rpc."})
    if (name.rfind(ns, 0) == 0) return true;
  return false;
}

std::optional<std::string> find_in(const torch::jit::Block& block);

std::optional<std::string> find_in(const torch::jit::Graph& graph) { return find_in(*graph.block()); }

std::optional<std::string> find_in(const torch::jit::Block& block) {
  for (const torch::jit::Node* node : block.nodes()) {
    const std::string kind = node->kind().toQualString();
    if (auto why = refusal(kind)) return why;
    for (const auto* v : node->outputs())
      if (outside_class(v->type())) return kind + " on " + v->type()->repr_str();
    for (const auto* v : node->inputs())
      if (outside_class(v->type())) return kind + " on " + v->type()->repr_str();
    for (const torch::jit::Block* inner : node->blocks())
      if (auto found = find_in(*inner)) return found;
    for (const auto name : node->attributeNames()) {  // forked subgraphs, fusion groups
      if (node->kindOf(name) == torch::jit::AttributeKind::g) {
        if (auto found = find_in(*node->g(name))) return found;
      } else if (node->kindOf(name) == torch::jit::AttributeKind::gs) {
        for (const auto& g : node->gs(name))
          if (auto found = find_in(*g)) return found;
      }
    }
  }
  return std::nullopt;
}

std::string readable_name(const c10::QualifiedName& name) {
  const std::string q = name.qualifiedName();
  return q.rfind("__torch__.", 0) == 0 ? q.substr(10) : q;
}

}  // namespace

std::optional<ScriptOperatorUse> find_outside_operator(const std::string& bytes) {
  std::istringstream in(bytes);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  if (reader.hasRecord("model.json"))
    throw std::runtime_error("a TorchScript file of the format before PyTorch 1.3, which skein does not read");
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  std::vector<c10::IValue> constants;
  // As torch::jit::load finds a class's source: code/<qualifier as a path>.py.
  auto source_of = [&reader](const std::string& qualifier) -> std::shared_ptr<torch::jit::Source> {
    std::string path = "code/" + qualifier;
    std::replace(path.begin(), path.end(), '.', '/');
    path += ".py";
    if (!reader.hasRecord(path)) return nullptr;
    auto [data, size] = reader.getRecord(path);
    return std::make_shared<torch::jit::Source>(
        c10::string_view(static_cast<const char*>(data.get()), size), path, 1);
  };
  torch::jit::SourceImporter importer(cu, &constants, source_of, reader.version());
  const torch::jit::TypeResolver resolve = [&](const c10::QualifiedName& name) {
    return c10::StrongTypePtr(cu, importer.loadType(name));
  };
  // Objects stay empty: their __setstate__ is code not yet looked at.
  const torch::jit::ObjLoader empty_object = [](const at::StrongTypePtr& type, const c10::IValue&) {
    return c10::ivalue::Object::create(type, type.type_->expect<c10::ClassType>()->numAttributes());
  };
  const c10::IValue table =
      torch::jit::readArchiveAndTensors("constants", "", "", resolve, empty_object, c10::Device(c10::kCPU), reader);
  for (const auto& c : table.toTupleRef().elements()) constants.push_back(c);
  torch::jit::readArchiveAndTensors("data", "", "", resolve, empty_object, c10::Device(c10::kCPU), reader);

  // Compiling a function may bring in more classes (and their methods): go
  // on until no function is new. All of this while `reader` lives, as the
  // importer reads sources from it.
  std::set<const torch::jit::Function*> seen;
  for (bool more = true; more;) {
    more = false;
    for (torch::jit::Function* fn : cu->get_functions()) {
      if (!seen.insert(fn).second) continue;
      more = true;
      fn->ensure_defined();
      if (auto* graph_fn = torch::jit::tryToGraphFunction(*fn))
        if (auto op = find_in(*graph_fn->graph())) return ScriptOperatorUse{readable_name(fn->qualname()), *op};
    }
  }
  return std::nullopt;
}

}  // namespace skein
