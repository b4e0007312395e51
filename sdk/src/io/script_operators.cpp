#include "skein/io/script_operators.hpp"

#include <map>
#include <set>

namespace skein {

namespace {

// Every namespace of operators registered by libtorch 1.13 and 2.15 (C++ and
// Python registrations both: torch._C._jit_get_all_schemas()), with what
// its operators do. Reaching outside: collectives and point-to-point
// operations between processes (c10d, the functional collectives, DTensor,
// symmetric memory, FSDP), and debugprims::load_tensor, which reads a file.
const std::map<std::string, ScriptOperatorRule>& namespace_rules() {
  using R = ScriptOperatorRule;
  static const std::map<std::string, ScriptOperatorRule> rules = {
      {"aten", R::computes},          {"prim", R::computes},
      {"prims", R::computes},         {"nvprims", R::computes},
      {"rngprims", R::computes},      {"inductor_prims", R::computes},
      {"inductor", R::computes},      {"quantized", R::computes},
      {"_quantized", R::computes},    {"quantization", R::computes},
      {"prepacked", R::computes},     {"sparse", R::computes},
      {"mkl", R::computes},           {"mkldnn", R::computes},
      {"mkldnn_prepacked", R::computes}, {"onednn", R::computes},
      {"onnx", R::computes},          {"static_runtime", R::computes},
      {"profiler", R::computes},      {"cuda", R::computes},
      {"coor", R::computes},          {"export", R::computes},
      {"flex_gemm", R::computes},     {"_native", R::computes},
      {"_native_aot", R::computes},   {"debug_mode_ops", R::computes},
      {"_test", R::computes},
      {"c10d", R::reaches_outside},   {"_c10d_functional", R::reaches_outside},
      {"_c10d_functional_autograd", R::reaches_outside},
      {"_dtensor", R::reaches_outside}, {"symm_mem", R::reaches_outside},
      {"fsdp", R::reaches_outside},   {"debugprims", R::reaches_outside},
  };
  return rules;
}

// Operators of namespaces that otherwise compute: aten::from_file maps a file
// into a tensor (writable with shared=True), aten::save writes one; the RPC
// calls reach other processes; a Python op runs Python.
const std::set<std::string>& outside_operators() {
  static const std::set<std::string> ops = {"aten::from_file", "aten::save",     "prim::rpc_async",
                                            "prim::rpc_sync",  "prim::rpc_remote", "prim::PythonOp",
                                            "prim::IgnoredPythonOp"};
  return ops;
}

}  // namespace

ScriptOperatorRule script_operator_rule(const std::string& qualified_name) {
  if (outside_operators().count(qualified_name)) return ScriptOperatorRule::reaches_outside;
  const auto colons = qualified_name.find("::");
  if (colons == std::string::npos) return ScriptOperatorRule::no_rule;
  const auto rule = namespace_rules().find(qualified_name.substr(0, colons));
  return rule == namespace_rules().end() ? ScriptOperatorRule::no_rule : rule->second;
}

std::vector<std::string> script_rule_namespaces() {
  std::vector<std::string> names;
  for (const auto& [name, rule] : namespace_rules()) names.push_back(name);
  return names;
}

}  // namespace skein
