// ExportedModel::operator_table: docs/pt2-operators.md, written from the
// rules the graph runner follows (pt2_graph.hpp) for this libtorch's
// operators.
#include <torch/version.h>

#include "skein/io/exported_model.hpp"
#include "skein/torch_compat/export_schema.hpp"

#if SKEIN_TORCH_EXPORT_SCHEMA
#include <map>
#include <set>
#include <sstream>

#include "pt2_graph.hpp"
#include "skein/io/script_operators.hpp"
#endif

namespace skein {

#if SKEIN_TORCH_EXPORT_SCHEMA

namespace {
// "`a`, `b`": names as Markdown code, in order.
std::string listed(const std::set<std::string>& names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "`" : ", `") + n + "`";
  return list;
}
}  // namespace

std::string ExportedModel::operator_table() {
  // Each aten operator once, by name, with what its overloads have.
  std::map<std::string, std::set<std::string>> follows, refused;  // operator -> arguments; reason -> operators
  std::set<std::string> names, outside, eval_only;
  std::size_t overloads = 0;
  for (const auto& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (name.name.rfind("aten::", 0) != 0) continue;
    const auto op = c10::Dispatcher::singleton().findOp(name);
    if (!op || !op->hasSchema()) continue;
    ++overloads;
    names.insert(name.name);
    for (const auto& a : op->schema().arguments())
      if (pt2::follows_mode(a)) follows[name.name].insert(a.name());
    if (const std::string why = pt2::refusal_of(*op); !why.empty()) refused[why].insert(name.name);
    if (script_operator_rule(name.name) != ScriptOperatorRule::computes) outside.insert(name.name);
    if (pt2::eval_only(name.name)) eval_only.insert(name.name);
  }
  std::ostringstream md;
  md << "# Operators of `.pt2` programs\n\n"
     << "<!-- Generated from the pt2 model's code (skein::ExportedModel::operator_table) for libtorch " TORCH_VERSION
        "; tests/test_pt2.cpp checks that it is current. -->\n\n"
     << "The `pt2` model runs each node of a program's graph by calling its operator through libtorch's "
        "dispatcher with the node's arguments, so every ATen operator of the libtorch Skein is built with runs, "
        "with autograd, autocast and devices as in PyTorch: "
     << names.size() << " operators (" << overloads << " overloads) of libtorch " TORCH_VERSION
     << ". What differs from a plain call is below. Custom operators run once their library is loaded (the "
        "model's `operator_libraries`); control flow (`torch.cond`, `torch.while_loop`, `torch.map`) and other "
        "higher-order operators, such as `wrap_with_set_grad_enabled` (`torch.no_grad()` inside `forward`), are "
        "refused at load.\n\n";
  md << "## Arguments that follow train/eval mode\n\n"
     << "A module is exported in one mode (train mode, as the user guide says); these arguments follow "
        "`train()`/`eval()` instead: flags are true in training and false in eval mode (left as exported on a norm "
        "given no running statistics, which uses the batch's in both modes), `dropout_p` is the exported rate "
        "in training and 0 in eval mode. `skein export --format pt2` writes their eval values.\n\n"
     << "| operator | arguments |\n|---|---|\n";
  for (const auto& [op, args] : follows) md << "| `" << op << "` | " << listed(args) << " |\n";
  md << "\n## Refused at load\n\nIn one line naming the node, whatever the mode:\n\n";
  for (const auto& [why, ops] : refused) md << "- " << why << ": " << listed(ops) << ".\n";
  md << "- They reach files or processes (unless `--allow-script-file-ops`): " << listed(outside) << ".\n";
  md << "\n## A warning at load\n\nOnly a module exported in eval mode has these (its graph keeps what Python "
        "decided from `self.training` at export): "
     << listed(eval_only) << ".\n";
  return md.str();
}

#else

std::string ExportedModel::operator_table() { return {}; }

#endif

}  // namespace skein
