#define BOOST_TEST_MODULE script_operators
#include <boost/test/unit_test.hpp>

#include <map>
#include <regex>
#include <string>

#include <torch/csrc/jit/runtime/operator.h>

#include "skein/io/script_operators.hpp"

// The TorchScript scanner's rules checked against the registry of the
// libtorch these tests run with, so that a libtorch upgrade that brings a new
// operator namespace, or a new operator reaching files or the network, fails
// here instead of slipping past the scanner.

namespace {

using skein::ScriptOperatorRule;

// Every namespace of the registry, with one of its operators as an example.
std::map<std::string, std::string> registered_namespaces() {
  std::map<std::string, std::string> found;
  for (const auto& op : torch::jit::getAllOperators()) {
    const std::string name = op->schema().name();
    const auto colons = name.find("::");
    if (colons != std::string::npos) found.emplace(name.substr(0, colons), name);
  }
  return found;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_registered_operator_namespace_has_a_rule) {
  const auto namespaces = registered_namespaces();
  BOOST_TEST_REQUIRE(namespaces.count("aten") == 1);  // the registry was read
  for (const auto& [ns, example] : namespaces)
    BOOST_TEST((skein::script_operator_rule(example) != ScriptOperatorRule::no_rule),
               "operator namespace '" << ns << "' (e.g. " << example
                                      << ") has no rule in sdk/src/io/script_operators.cpp");
}

BOOST_AUTO_TEST_CASE(operators_taking_a_file_name_or_an_address_reach_outside) {
  // A string argument named like a file, a path or a network address is what
  // aten::from_file and aten::save take; any other operator like them must be
  // on the scanner's list.
  const std::regex outside_name("file|path|dir|url|addr|host|port", std::regex::icase);
  int seen = 0;
  for (const auto& op : torch::jit::getAllOperators()) {
    const auto& schema = op->schema();
    for (const auto& arg : schema.arguments()) {
      const std::string type = arg.type()->str();
      if ((type == "str" || type == "str?" || type == "Optional[str]") && std::regex_search(arg.name(), outside_name)) {
        ++seen;
        BOOST_TEST((skein::script_operator_rule(schema.name()) == ScriptOperatorRule::reaches_outside),
                   schema.name() << " takes '" << arg.name() << "' but the scanner lets it compute");
        break;
      }
    }
  }
  BOOST_TEST(seen >= 2);  // aten::from_file and aten::save at least
}

BOOST_AUTO_TEST_CASE(rules_by_name) {
  BOOST_TEST((skein::script_operator_rule("aten::from_file") == ScriptOperatorRule::reaches_outside));
  BOOST_TEST((skein::script_operator_rule("aten::save") == ScriptOperatorRule::reaches_outside));
  BOOST_TEST((skein::script_operator_rule("c10d::allreduce_") == ScriptOperatorRule::reaches_outside));
  BOOST_TEST((skein::script_operator_rule("_c10d_functional::all_reduce") == ScriptOperatorRule::reaches_outside));
  BOOST_TEST((skein::script_operator_rule("aten::linear") == ScriptOperatorRule::computes));
  BOOST_TEST((skein::script_operator_rule("prim::GetAttr") == ScriptOperatorRule::computes));
  BOOST_TEST((skein::script_operator_rule("my_lib::custom_op") == ScriptOperatorRule::no_rule));
  BOOST_TEST((skein::script_operator_rule("no_namespace") == ScriptOperatorRule::no_rule));
}
