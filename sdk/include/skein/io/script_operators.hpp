#pragma once
// What skein's TorchScript scanner does with each operator a module's code
// calls (skein::load_script_module refuses a module that calls one reaching
// outside unless --allow-script-file-ops). The rules are kept per operator
// namespace, so that a libtorch with a new namespace cannot slip past them:
// an operator of a namespace without a rule is refused too, and Skein's tests
// enumerate the registry of the libtorch they run with for namespaces that
// have none.
#include <string>
#include <vector>

#include "skein/detail/export.hpp"

namespace skein {

enum class ScriptOperatorRule {
  computes,         // works on the tensors and values it is given
  reaches_outside,  // files, other processes, the network, Python
  no_rule,          // of a namespace the scanner does not know: refused like reaches_outside
};

// The rule for an operator by its qualified name ("aten::from_file").
SKEIN_EXPORT ScriptOperatorRule script_operator_rule(const std::string& qualified_name);

// Every operator namespace the rules name ("aten", "c10d", ...).
SKEIN_EXPORT std::vector<std::string> script_rule_namespaces();

}  // namespace skein
