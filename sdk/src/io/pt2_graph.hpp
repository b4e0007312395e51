#pragma once
// The graph of a torch.export program made runnable: each node bound once,
// when the model loads, to an operator handle of libtorch's dispatcher and to
// where each of its arguments comes from; run() then calls the operators in
// order on a stack of IValues, so autograd records every step.
#include "skein/torch_compat/export_schema.hpp"
#if SKEIN_TORCH_EXPORT_SCHEMA
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

namespace skein::pt2 {

// The one home of how the pt2 model treats operators (the graph below, and
// the table of docs/pt2-operators.md: ExportedModel::operator_table):
// - an argument that follows train/eval mode: `train`, `training` and
//   `use_input_stats` flags (bool or bool?; false in eval, and left as
//   exported on a norm given no running statistics, which uses the batch's
//   in both modes), and `dropout_p` (0 in eval);
bool follows_mode(const c10::Argument& schema_arg);
// - operators only a module exported in eval mode has (warned of at load);
bool eval_only(const std::string& op);
// - why an operator is refused at load wherever it stands ("" where it is
//   not): random draws eval mode cannot switch off, statistics updated in
//   eval mode too. (Operators reaching files or processes:
//   skein/io/script_operators.hpp.)
std::string refusal_of(const c10::OperatorHandle& op);

class Graph {
 public:
  // `buffers`: the names of the graph inputs that are module buffers (for
  // eval mode, which writes none). Throws std::runtime_error naming the node
  // and operator the graph has that cannot run here.
  Graph(const torch::_export::Graph& graph, const std::set<std::string>& buffers);

  // The graph's outputs for its inputs (in the order of the graph's
  // placeholders). `training` sets every argument that follows the mode
  // (mode_arguments()).
  std::vector<c10::IValue> run(std::vector<c10::IValue> inputs, bool training) const;

  // Each operator once, in the order of first use, and the node that first
  // calls it.
  const std::vector<std::string>& operators() const { return operators_; }
  const std::vector<std::string>& first_callers() const { return first_callers_; }
  // The nodes eval mode skips (they write a buffer and nothing reads them).
  std::set<std::string> eval_skipped_nodes() const;
  // The arguments that follow train/eval mode, by node: `train`/`training`
  // flags (false in eval), `use_input_stats` of a norm with running
  // statistics (false in eval), `dropout_p` (0 in eval).
  const std::map<std::string, std::vector<std::string>>& mode_arguments() const { return mode_arguments_; }
  // Where the graph shows that it was exported in eval mode ("node 'bn'
  // (aten::_native_batch_norm_legit_no_training)"), or empty.
  const std::string& eval_export_evidence() const { return eval_evidence_; }

 private:
  // Where one argument of a call comes from.
  struct Arg {
    enum Kind { constant, in_slot, int_list, tensor_list, optional_tensor_list, by_mode } kind = constant;
    c10::IValue value;                 // constant; by_mode: in training
    c10::IValue eval_value;            // by_mode: in eval mode
    int slot = -1;                     // slot
    std::vector<int> slots;            // lists: a slot per element, -1 for a constant element
    std::vector<c10::IValue> items;    // lists: the constant elements
  };
  // One node: an operator of the dispatcher, or arithmetic on sizes.
  struct Step {
    enum Kind { op, sym_size, sym_arith } kind = op;
    std::string name;                  // the node's, for errors
    std::optional<c10::OperatorHandle> handle;
    std::string arith;                 // sym_arith: "mul", "add", ...
    std::vector<Arg> args;
    std::vector<std::vector<int>> outputs;  // per return: slots (one, or one per list element); empty: unused
    bool writes_buffer = false;        // skipped in eval mode
    std::vector<int> free_after;       // slots whose last use this is
  };

  int slot_of(const std::string& name);
  Arg arg_of(const torch::_export::Argument& a, const std::string& where);
  void bind_outputs(Step& step, const torch::_export::Node& node, std::size_t returns);
  c10::IValue value(const Arg& a, const std::vector<c10::IValue>& slots, bool training) const;
  void run_step(const Step& step, std::vector<c10::IValue>& slots, bool training) const;

  std::unordered_map<std::string, int> slots_;
  std::vector<int> inputs_;
  std::vector<Arg> outputs_;
  std::vector<Step> steps_;
  std::vector<std::string> operators_;
  std::vector<std::string> first_callers_;
  std::map<std::string, std::vector<std::string>> mode_arguments_;
  std::string eval_evidence_;
};

}  // namespace skein::pt2
#endif
