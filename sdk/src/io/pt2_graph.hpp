#pragma once
// The graph of a torch.export program made runnable: each node bound once,
// when the model loads, to an operator handle of libtorch's dispatcher and to
// where each of its arguments comes from; run() then calls the operators in
// order on a stack of IValues, so autograd records every step.
#include "skein/torch_compat/export_schema.hpp"
#if SKEIN_TORCH_EXPORT_SCHEMA
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

namespace skein::pt2 {

class Graph {
 public:
  // `buffers`: the names of the graph inputs that are module buffers (for
  // eval mode, which writes none). Throws std::runtime_error naming the node
  // and operator the graph has that cannot run here.
  Graph(const torch::_export::Graph& graph, const std::set<std::string>& buffers);

  // The graph's outputs for its inputs (in the order of the graph's
  // placeholders). `training` sets every `train`/`training` argument.
  std::vector<c10::IValue> run(std::vector<c10::IValue> inputs, bool training) const;

  // Each operator once, in the order of first use, and the node that first
  // calls it.
  const std::vector<std::string>& operators() const { return operators_; }
  const std::vector<std::string>& first_callers() const { return first_callers_; }
  // The nodes eval mode skips (they write a buffer and nothing reads them).
  std::set<std::string> eval_skipped_nodes() const;

 private:
  // Where one argument of a call comes from.
  struct Arg {
    enum Kind { constant, in_slot, int_list, tensor_list, optional_tensor_list, train_flag } kind = constant;
    c10::IValue value;                 // constant
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
};

}  // namespace skein::pt2
#endif
